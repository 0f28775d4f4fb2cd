/*
 * A stand-in for libcupti, for KernelTraceTest only, built against the mock cupti.h beside it: enough of the
 * activity API for perf/native/kernel_trace.c to run on a machine without a GPU. cuptiActivityFlushAll asks the
 * tracer for a buffer, fills it with four records (two kernels, a memcpy that the tracer must skip, a kernel
 * without a name) and hands it back; cuptiActivityGetNumDroppedRecords says 2 records were dropped. With
 * STUB_CUPTI_FAIL set, cuptiActivityEnable fails.
 */
#include <cupti.h>
#include <stdlib.h>
#include <string.h>

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static int flushed;

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                    CUpti_BuffersCallbackCompleteFunc c) {
  requested = r;
  completed = c;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  return getenv("STUB_CUPTI_FAIL") || kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? CUPTI_ERROR_INVALID_PARAMETER
                                                                                    : CUPTI_SUCCESS;
}

static void put(uint8_t* at, CUpti_ActivityKind kind, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                const char* name) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof(k));
  k.kind = kind;
  k.start = start;
  k.end = end;
  k.deviceId = device;
  k.streamId = stream;
  k.name = name;
  memcpy(at, &k, sizeof(k));
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  if (!requested || !completed || flushed || flag != CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) return CUPTI_SUCCESS;
  flushed = 1;
  uint8_t* buffer = NULL;
  size_t size = 0, max_records = 0;
  requested(&buffer, &size, &max_records);
  if (!buffer || size < 4 * sizeof(CUpti_ActivityKernel10)) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t r = sizeof(CUpti_ActivityKernel10);
  put(buffer, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1000000, 1300000, 1, 13, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  put(buffer + r, CUPTI_ACTIVITY_KIND_MEMCPY, 1400000, 1500000, 1, 13, "memcpy");
  put(buffer + 2 * r, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1302500, 1602000, 1, 13, "kernel<a, b>(int)");
  put(buffer + 3 * r, CUPTI_ACTIVITY_KIND_KERNEL, 2000000, 2000500, 0, 7, NULL);
  completed(NULL, 0, buffer, size, 4 * r);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* next = *record ? (uint8_t*)*record + sizeof(CUpti_ActivityKernel10) : buffer;
  if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity*)next;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t* dropped) {
  (void)context;
  (void)stream;
  *dropped = 2;
  return CUPTI_SUCCESS;
}

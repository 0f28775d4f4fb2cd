/*
 * A stand-in for libcupti, for KernelTraceTest only, built against the mock cupti.h beside it: enough of the
 * activity API for scripts/bench/native/kernel_trace.c to run on a machine without a GPU. cuptiActivityFlushAll asks the
 * tracer for a buffer, fills it with records and hands it back: three kernels (one without a name), a memcpy that
 * the tracer must skip and, of the kinds CUPTI_ACTIVITY_KIND_DRIVER and CUPTI_ACTIVITY_KIND_RUNTIME that were
 * enabled, seven API calls (one cbid twice, one cbid in both domains, one cbid without a name);
 * cuptiActivityGetNumDroppedRecords says 2 records were dropped. cuptiGetCallbackName knows the names of the
 * callback ids used here, by domain, as CUDA 13's CUPTI names them.
 *
 * Environment: STUB_CUPTI_FAIL: cuptiActivityEnable fails; STUB_CUPTI_FAIL_RUNTIME: it fails for
 * CUPTI_ACTIVITY_KIND_RUNTIME alone; STUB_CUPTI_LOG=<file>: each cuptiActivityEnable ("enable <kind>") and
 * cuptiGetCallbackName ("name <domain> <cbid>") call is appended to the file, a line each.
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef union {
  CUpti_Activity any;
  CUpti_ActivityKernel10 kernel;
  CUpti_ActivityAPI api;
} Record; /* every record the stub hands over takes one of these */

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static int flushed;
static unsigned enabled; /* bit (1 << kind) for each kind enabled */

static void note(const char* format, unsigned a, unsigned b) {
  const char* path = getenv("STUB_CUPTI_LOG");
  FILE* f = path ? fopen(path, "a") : NULL;
  if (!f) return;
  fprintf(f, format, a, b);
  fclose(f);
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                    CUpti_BuffersCallbackCompleteFunc c) {
  requested = r;
  completed = c;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  note("enable %u\n", (unsigned)kind, 0);
  if (getenv("STUB_CUPTI_FAIL") || (getenv("STUB_CUPTI_FAIL_RUNTIME") && kind == CUPTI_ACTIVITY_KIND_RUNTIME))
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kind != CUPTI_ACTIVITY_KIND_DRIVER &&
      kind != CUPTI_ACTIVITY_KIND_RUNTIME)
    return CUPTI_ERROR_INVALID_PARAMETER;
  enabled |= 1u << kind;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  note("name %u %u\n", (unsigned)domain, cbid);
  static const struct {
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char* name;
  } names[] = {
      {CUPTI_CB_DOMAIN_DRIVER_API, 17, "cuCtxSynchronize"},
      {CUPTI_CB_DOMAIN_DRIVER_API, 307, "cuLaunchKernel"},
      {CUPTI_CB_DOMAIN_DRIVER_API, 652, "cuLaunchKernelEx"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, 17, "cudaGetDevice_v3020"},
      {CUPTI_CB_DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel_v7000"},
  };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    if (names[i].domain == domain && names[i].cbid == cbid) {
      *name = names[i].name;
      return CUPTI_SUCCESS;
    }
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

static size_t kernel(Record* at, CUpti_ActivityKind kind, uint64_t start, uint64_t end, uint32_t device,
                     uint32_t stream, uint32_t correlation, const char* name) {
  memset(at, 0, sizeof(*at));
  at->kernel.kind = kind;
  at->kernel.start = start;
  at->kernel.end = end;
  at->kernel.deviceId = device;
  at->kernel.streamId = stream;
  at->kernel.correlationId = correlation;
  at->kernel.name = name;
  return 1;
}

/* an API call, if its kind was enabled: 1 record, else 0 */
static size_t call(Record* at, CUpti_ActivityKind kind, uint32_t cbid, uint64_t start, uint64_t end, uint32_t thread,
                   uint32_t correlation) {
  if (!(enabled & (1u << kind))) return 0;
  memset(at, 0, sizeof(*at));
  at->api.kind = kind;
  at->api.cbid = cbid;
  at->api.start = start;
  at->api.end = end;
  at->api.processId = 4242;
  at->api.threadId = thread;
  at->api.correlationId = correlation;
  at->api.returnValue = 0;
  return 1;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  if (!requested || !completed || flushed || flag != CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) return CUPTI_SUCCESS;
  flushed = 1;
  uint8_t* buffer = NULL;
  size_t size = 0, max_records = 0;
  requested(&buffer, &size, &max_records);
  if (!buffer || size < 16 * sizeof(Record)) return CUPTI_ERROR_INVALID_PARAMETER;
  Record* r = (Record*)buffer;
  size_t n = 0;
  const CUpti_ActivityKind driver = CUPTI_ACTIVITY_KIND_DRIVER, runtime = CUPTI_ACTIVITY_KIND_RUNTIME;
  n += kernel(r + n, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1000000, 1300000, 1, 13, 41,
              "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  n += kernel(r + n, CUPTI_ACTIVITY_KIND_MEMCPY, 1400000, 1500000, 1, 13, 0, "memcpy");
  n += call(r + n, driver, 652, 990000, 993000, 7001, 41);  /* cuLaunchKernelEx */
  n += kernel(r + n, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1302500, 1602000, 1, 13, 42, "kernel<a, b>(int)");
  n += call(r + n, runtime, 211, 994000, 997500, 7002, 42); /* cudaLaunchKernel_v7000 */
  n += call(r + n, driver, 307, 995000, 997000, 7002, 42);  /* cuLaunchKernel, within it */
  n += kernel(r + n, CUPTI_ACTIVITY_KIND_KERNEL, 2000000, 2000500, 0, 7, 43, NULL);
  n += call(r + n, runtime, 17, 998000, 998200, 7001, 44);  /* cudaGetDevice_v3020 */
  n += call(r + n, driver, 17, 998500, 1100000, 7001, 45);  /* cuCtxSynchronize: the same cbid, the driver's */
  n += call(r + n, driver, 652, 999000, 999800, 7002, 46);  /* cuLaunchKernelEx again */
  n += call(r + n, driver, 9999, 1200000, 1200100, 7001, 47); /* no name */
  completed(NULL, 0, buffer, size, n * sizeof(Record));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* next = *record ? (uint8_t*)*record + sizeof(Record) : buffer;
  if (next + sizeof(Record) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity*)next;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t* dropped) {
  (void)context;
  (void)stream;
  *dropped = 2;
  return CUPTI_SUCCESS;
}

/*
 * A CUPTI kernel tracer for any CUDA process, C or JVM, for GPU machines without Nsight Systems
 * (scripts/bench/perf-timeline.sh uses it when no nsys is found). It records every kernel's GPU start and end and, with
 * KERNEL_TRACE_API=1, every CUDA driver and runtime API call of the process, and writes them to CSV files when the
 * process exits.
 *
 * Loading: the CUDA driver loads the library named by CUDA_INJECTION64_PATH when the process initializes CUDA
 * and calls its InitializeInjection(); nothing in the traced program changes:
 *
 *   mpirun ... -x CUDA_INJECTION64_PATH=scripts/bench/native/build/libkernel_trace.so -x KERNEL_TRACE_DIR=<dir> \
 *       [-x KERNEL_TRACE_API=1] <program>
 *
 * Output: KERNEL_TRACE_DIR/trace-<pid>.csv (KERNEL_TRACE_DIR must exist; default: the working directory), one
 * line per kernel, in the order CUPTI hands the records over (not sorted):
 *
 *   start_ns,end_ns,device,stream,correlation_id,name
 *
 * start and end are CUPTI timestamps (ns, one clock for all devices of the process and the host), device the CUDA
 * device ordinal, stream CUPTI's stream id, correlation_id the id CUPTI gives the API call that launched the kernel,
 * name the kernel's name as CUPTI gives it (mangled; it may contain commas, so it is the last field). Lines
 * starting with '#' are notes: "# dropped N" when CUPTI had to drop N records (its buffers were full), "# CUPTI
 * activity setup failed" when tracing could not start.
 *
 * With KERNEL_TRACE_API=1 (and only then: otherwise no API activity is enabled, at no cost), also
 * KERNEL_TRACE_DIR/trace-<pid>-api.csv, one line per driver or runtime API call, in the order CUPTI hands them over:
 *
 *   start_ns,end_ns,kind,cbid,thread_id,correlation_id,name
 *
 * kind is "driver" (CUPTI_ACTIVITY_KIND_DRIVER: the CUDA driver API, which NCCL calls through its own static
 * cudart) or "runtime" (CUPTI_ACTIVITY_KIND_RUNTIME: the shared cudart's API), cbid CUPTI's callback id of the
 * function, thread_id the calling thread, correlation_id the call's (a kernel's correlation_id is the one of the
 * call that launched it), name the function's name from cuptiGetCallbackName ("?" when CUPTI has none). Notes as
 * above: "# dropped N" (records of either file may be missing), "# CUPTI API activity setup failed" (the kernels
 * are traced all the same).
 *
 * It enables CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which records kernels as they run: unlike
 * CUPTI_ACTIVITY_KIND_KERNEL it does not serialize kernels, so the timeline is the one of an untraced run (but
 * for CUPTI's own small overhead per launch; API tracing adds some per call).
 *
 * KREC is the kernel activity record type of the CUPTI at hand (CUpti_ActivityKernel10 in CUDA 13.0; the start,
 * end, deviceId, streamId, correlationId and name fields used here are in all of them): scripts/bench/native/build.sh tries
 * the newest first, -DKREC=CUpti_ActivityKernel11, then 10, then 9.
 */
#include <cupti.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef KREC
#define KREC CUpti_ActivityKernel9
#endif

#define BUF_BYTES (16u << 20) /* per CUPTI buffer: some 80 000 kernel records */
#define BUF_ALIGN 8           /* CUPTI wants activity buffers 8-byte aligned */
#define NAME_SLOTS 1024       /* callback ids whose names are cached, per API (CUDA 13: 807 driver, 523 runtime) */

static FILE* out; /* trace-<pid>.csv: the kernels */
static FILE* api; /* trace-<pid>-api.csv: the API calls, with KERNEL_TRACE_API=1; else NULL */

/* CUPTI asks for an empty buffer to fill with records. */
static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = (uint8_t*)aligned_alloc(BUF_ALIGN, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0; /* as many as fit */
}

/* The name of API function cbid of domain, asked of CUPTI once per (domain, cbid) below NAME_SLOTS; "?" when CUPTI
 * has none. CUPTI may hand buffers over on more than one thread: the slots are read and written atomically (two
 * threads may both ask CUPTI, and store the same name). */
static const char* api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  static const char* cache[2][NAME_SLOTS]; /* [0]: driver, [1]: runtime */
  const char** slot = cbid < NAME_SLOTS ? &cache[domain == CUPTI_CB_DOMAIN_RUNTIME_API][cbid] : NULL;
  const char* name = slot ? __atomic_load_n(slot, __ATOMIC_RELAXED) : NULL;
  if (!name) {
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) name = "?";
    if (slot) __atomic_store_n(slot, name, __ATOMIC_RELAXED);
  }
  return name;
}

static void write_kernel(const KREC* k) {
  fprintf(out, "%llu,%llu,%u,%u,%u,%s\n", (unsigned long long)k->start, (unsigned long long)k->end,
          (unsigned)k->deviceId, (unsigned)k->streamId, (unsigned)k->correlationId, k->name ? k->name : "?");
}

static void write_api(const CUpti_ActivityAPI* a) {
  int driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
  fprintf(api, "%llu,%llu,%s,%u,%u,%u,%s\n", (unsigned long long)a->start, (unsigned long long)a->end,
          driver ? "driver" : "runtime", (unsigned)a->cbid, (unsigned)a->threadId, (unsigned)a->correlationId,
          api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid));
}

/* CUPTI hands back a buffer with `valid` bytes of records: write the kernels and API calls, then free it. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  (void)size;
  CUpti_Activity* record = NULL;
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      write_kernel((const KREC*)record);
    else if (api && (record->kind == CUPTI_ACTIVITY_KIND_DRIVER || record->kind == CUPTI_ACTIVITY_KIND_RUNTIME))
      write_api((const CUpti_ActivityAPI*)record);
  }
  size_t dropped = 0;
  if (out && cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
    fprintf(out, "# dropped %zu\n", dropped);
    if (api) fprintf(api, "# dropped %zu\n", dropped);
  }
  free(buffer);
}

/* At exit: CUPTI hands over the buffers it still holds (buffer_completed, before the flush returns). */
static void finish(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  FILE* f = out;
  FILE* a = api;
  out = NULL;
  api = NULL;
  if (f) fclose(f);
  if (a) fclose(a);
}

/* KERNEL_TRACE_DIR/trace-<pid><suffix>.csv opened for writing (its path in path); NULL, said on stderr, if not. */
static FILE* open_trace(const char* suffix, char* path, size_t size) {
  const char* dir = getenv("KERNEL_TRACE_DIR");
  snprintf(path, size, "%s/trace-%d%s.csv", dir && *dir ? dir : ".", (int)getpid(), suffix);
  FILE* f = fopen(path, "w");
  if (!f) fprintf(stderr, "kernel_trace: cannot write %s: %s\n", path, strerror(errno));
  return f;
}

/* KERNEL_TRACE_API=1: the driver and runtime API calls to trace-<pid>-api.csv. When that fails the kernels are
 * traced all the same. */
static void start_api(void) {
  char path[4096];
  FILE* f = open_trace("-api", path, sizeof(path));
  if (!f) return;
  /* records reach buffer_completed only when a buffer is full or flushed, long after api is set */
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS &&
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS) {
    api = f;
    return;
  }
  fprintf(f, "# CUPTI API activity setup failed\n"); /* the records of a kind that was enabled are skipped */
  fclose(f);
  fprintf(stderr, "kernel_trace: CUPTI API activity setup failed: no API trace in %s\n", path);
}

/* Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH). 1: tracing, 0: not. */
int InitializeInjection(void) {
  char path[4096];
  out = open_trace("", path, sizeof(path));
  if (!out) return 0;
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(out, "# CUPTI activity setup failed\n");
    fclose(out);
    out = NULL;
    fprintf(stderr, "kernel_trace: CUPTI activity setup failed: no kernel trace in %s\n", path);
    return 0;
  }
  const char* with_api = getenv("KERNEL_TRACE_API");
  if (with_api && strcmp(with_api, "1") == 0) start_api();
  atexit(finish);
  return 1;
}

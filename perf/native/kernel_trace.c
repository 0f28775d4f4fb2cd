/*
 * A CUPTI kernel tracer for any CUDA process, C or JVM, for GPU machines without Nsight Systems
 * (scripts/perf-timeline.sh uses it when no nsys is found). It records every kernel's GPU start and end and
 * writes them to a CSV file when the process exits.
 *
 * Loading: the CUDA driver loads the library named by CUDA_INJECTION64_PATH when the process initializes CUDA
 * and calls its InitializeInjection(); nothing in the traced program changes:
 *
 *   mpirun ... -x CUDA_INJECTION64_PATH=perf/native/build/libkernel_trace.so -x KERNEL_TRACE_DIR=<dir> <program>
 *
 * Output: KERNEL_TRACE_DIR/trace-<pid>.csv (KERNEL_TRACE_DIR must exist; default: the working directory), one
 * line per kernel, in the order CUPTI hands the records over (not sorted):
 *
 *   start_ns,end_ns,device,stream,name
 *
 * start and end are CUPTI timestamps (ns, one clock for all devices of the process), device the CUDA device
 * ordinal, stream CUPTI's stream id, name the kernel's name as CUPTI gives it (mangled; it may contain commas,
 * so it is the last field). Lines starting with '#' are notes: "# dropped N" when CUPTI had to drop N records
 * (its buffers were full), "# CUPTI activity setup failed" when tracing could not start.
 *
 * It enables CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which records kernels as they run: unlike
 * CUPTI_ACTIVITY_KIND_KERNEL it does not serialize kernels, so the timeline is the one of an untraced run (but
 * for CUPTI's own small overhead per launch).
 *
 * KREC is the kernel activity record type of the CUPTI at hand (CUpti_ActivityKernel10 in CUDA 13.0; the start,
 * end, deviceId, streamId and name fields used here are in all of them): perf/native/build.sh tries the newest
 * first, -DKREC=CUpti_ActivityKernel11, then 10, then 9.
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

static FILE* out;

/* CUPTI asks for an empty buffer to fill with records. */
static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = (uint8_t*)aligned_alloc(BUF_ALIGN, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0; /* as many as fit */
}

/* CUPTI hands back a buffer with `valid` bytes of records: write the kernels, then free it. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  (void)size;
  CUpti_Activity* record = NULL;
  while (out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const KREC* k = (const KREC*)record;
      fprintf(out, "%llu,%llu,%u,%u,%s\n", (unsigned long long)k->start, (unsigned long long)k->end,
              (unsigned)k->deviceId, (unsigned)k->streamId, k->name ? k->name : "?");
    }
  }
  size_t dropped = 0;
  if (out && cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
    fprintf(out, "# dropped %zu\n", dropped);
  free(buffer);
}

/* At exit: CUPTI hands over the buffers it still holds (buffer_completed, before the flush returns). */
static void finish(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  FILE* f = out;
  out = NULL;
  if (f) fclose(f);
}

/* Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH). 1: tracing, 0: not. */
int InitializeInjection(void) {
  const char* dir = getenv("KERNEL_TRACE_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/trace-%d.csv", dir && *dir ? dir : ".", (int)getpid());
  out = fopen(path, "w");
  if (!out) {
    fprintf(stderr, "kernel_trace: cannot write %s: %s\n", path, strerror(errno));
    return 0;
  }
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(out, "# CUPTI activity setup failed\n");
    fclose(out);
    out = NULL;
    fprintf(stderr, "kernel_trace: CUPTI activity setup failed: no kernel trace in %s\n", path);
    return 0;
  }
  atexit(finish);
  return 1;
}

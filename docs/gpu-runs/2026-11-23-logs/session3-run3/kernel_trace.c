/*
 * Experiment (session 3, device call 3), a CUPTI kernel tracer for any CUDA process (C or JVM): loaded through
 * CUDA_INJECTION64_PATH, it records every kernel's GPU start and end (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which
 * does not serialize kernels) and writes, at exit, KERNEL_TRACE_DIR/trace-<pid>.csv with lines
 * start_ns,end_ns,device,stream,name. KREC is the kernel record type of the CUPTI at hand (the build tries the
 * newest first).
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef KREC
#define KREC CUpti_ActivityKernel9
#endif
#define BUF_BYTES (16u << 20)

static FILE* out;

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = (uint8_t*)aligned_alloc(8, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  (void)ctx; (void)stream; (void)size;
  CUpti_Activity* r = NULL;
  while (out && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const KREC* k = (const KREC*)r;
      fprintf(out, "%llu,%llu,%u,%u,%.60s\n", (unsigned long long)k->start, (unsigned long long)k->end,
              k->deviceId, k->streamId, k->name ? k->name : "?");
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped && out)
    fprintf(out, "# dropped %zu\n", dropped);
  free(buffer);
}

static void finish(void) {
  cuptiActivityFlushAll(1);
  if (out) fclose(out);
  out = NULL;
}

int InitializeInjection(void) {
  const char* dir = getenv("KERNEL_TRACE_DIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/trace-%d.csv", dir ? dir : ".", (int)getpid());
  out = fopen(path, "w");
  if (!out) return 0;
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(out, "# CUPTI activity setup failed\n");
    return 0;
  }
  atexit(finish);
  return 1;
}

/*
 * A stub CUDA runtime for nccl4j's CPU tests (never shipped): the calls nccl4j's CUDA shim resolves, working on
 * host memory. Built several times (build-stubs.sh), each build fixing what it reports:
 *   STUB_RUNTIME  cudaRuntimeGetVersion (13000 for CUDA 13.0, 12090 for 12.9, 11080 for 11.8)
 *   STUB_DRIVER   cudaDriverGetVersion (0: no driver installed)
 *   STUB_DEVICES  cudaGetDeviceCount, so that a test tells which stub answered
 *   STUB_PARTIAL  leaves out cudaGraphInstantiate (a library that is not a whole CUDA 12 or 13 runtime)
 * "Device" memory is host memory from malloc, remembered so that cudaPointerGetAttributes can say which device
 * owns an address; streams, events and graphs are small heap blocks.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef STUB_RUNTIME
#define STUB_RUNTIME 13000
#endif
#ifndef STUB_DRIVER
#define STUB_DRIVER 13000
#endif
#ifndef STUB_DEVICES
#define STUB_DEVICES 2
#endif

#define EXPORT __attribute__((visibility("default")))
#define OK 0
#define ERR_INVALID_VALUE 1
#define ERR_INVALID_DEVICE 101

typedef struct { int type; int device; void* devicePointer; void* hostPointer; } stub_attributes;

#define MAX_BLOCKS 1024
static struct { char* start; size_t bytes; int device; } blocks[MAX_BLOCKS];
static int current = 0;
static int capturing = 0;

EXPORT int cudaRuntimeGetVersion(int* v) { *v = STUB_RUNTIME; return OK; }
EXPORT int cudaDriverGetVersion(int* v) { *v = STUB_DRIVER; return OK; }
EXPORT int cudaGetDeviceCount(int* n) { *n = STUB_DEVICES; return OK; }
EXPORT int cudaSetDevice(int d) {
  if (d < 0 || d >= STUB_DEVICES) return ERR_INVALID_DEVICE;
  current = d;
  return OK;
}
EXPORT int cudaGetDevice(int* d) { *d = current; return OK; }

EXPORT int cudaMalloc(void** p, size_t bytes) {
  for (int i = 0; i < MAX_BLOCKS; i++) {
    if (blocks[i].start == NULL) {
      blocks[i].start = calloc(1, bytes == 0 ? 1 : bytes);
      if (blocks[i].start == NULL) return 2; /* cudaErrorMemoryAllocation */
      blocks[i].bytes = bytes;
      blocks[i].device = current;
      *p = blocks[i].start;
      return OK;
    }
  }
  return 2;
}
EXPORT int cudaFree(void* p) {
  if (p == NULL) return OK;
  for (int i = 0; i < MAX_BLOCKS; i++) {
    if (blocks[i].start == p) {
      free(blocks[i].start);
      blocks[i].start = NULL;
      return OK;
    }
  }
  return ERR_INVALID_VALUE;
}
EXPORT int cudaMemcpy(void* dst, const void* src, size_t bytes, int kind) {
  if (kind < 0 || kind > 4) return 21; /* cudaErrorInvalidMemcpyDirection */
  memmove(dst, src, bytes);
  return OK;
}
EXPORT int cudaMemset(void* p, int value, size_t bytes) { memset(p, value, bytes); return OK; }
EXPORT int cudaPointerGetAttributes(stub_attributes* a, const void* p) {
  memset(a, 0, sizeof(*a));
  for (int i = 0; i < MAX_BLOCKS; i++) {
    const char* s = blocks[i].start;
    if (s != NULL && (const char*)p >= s && (const char*)p < s + blocks[i].bytes) {
      a->type = 2; /* cudaMemoryTypeDevice */
      a->device = blocks[i].device;
      a->devicePointer = (void*)p;
      return OK;
    }
  }
  return OK; /* unregistered host memory: type 0 */
}

static void* token(void) { return malloc(16); }
EXPORT int cudaStreamCreateWithFlags(void** s, unsigned int flags) { (void)flags; *s = token(); return OK; }
EXPORT int cudaStreamDestroy(void* s) { free(s); return OK; }
EXPORT int cudaStreamSynchronize(void* s) { (void)s; return OK; }
EXPORT int cudaStreamQuery(void* s) { (void)s; return OK; }
EXPORT int cudaStreamIsCapturing(void* s, int* status) { (void)s; *status = capturing; return OK; }
EXPORT int cudaEventCreateWithFlags(void** e, unsigned int flags) { (void)flags; *e = token(); return OK; }
EXPORT int cudaEventDestroy(void* e) { free(e); return OK; }
EXPORT int cudaEventRecord(void* e, void* s) { (void)e; (void)s; return OK; }
EXPORT int cudaEventSynchronize(void* e) { (void)e; return OK; }
EXPORT int cudaEventQuery(void* e) { (void)e; return OK; }
EXPORT int cudaEventElapsedTime(float* ms, void* a, void* b) { (void)a; (void)b; *ms = 1.5f; return OK; }
EXPORT int cudaStreamWaitEvent(void* s, void* e, unsigned int flags) { (void)s; (void)e; (void)flags; return OK; }
EXPORT int cudaStreamBeginCapture(void* s, int mode) { (void)s; (void)mode; capturing = 1; return OK; }
EXPORT int cudaStreamEndCapture(void* s, void** g) { (void)s; capturing = 0; *g = token(); return OK; }
#ifndef STUB_PARTIAL
EXPORT int cudaGraphInstantiate(void** exec, void* g, unsigned long long flags) {
  (void)g; (void)flags;
  *exec = token();
  return OK;
}
#endif
EXPORT int cudaGraphLaunch(void* exec, void* s) { (void)exec; (void)s; return OK; }
EXPORT int cudaGraphExecDestroy(void* exec) { free(exec); return OK; }
EXPORT int cudaGraphDestroy(void* g) { free(g); return OK; }

EXPORT const char* cudaGetErrorName(int code) {
  switch (code) {
    case 0: return "cudaSuccess";
    case 1: return "cudaErrorInvalidValue";
    case 2: return "cudaErrorMemoryAllocation";
    case 101: return "cudaErrorInvalidDevice";
    default: return "cudaErrorUnknown";
  }
}
EXPORT const char* cudaGetErrorString(int code) {
  return code == 101 ? "invalid device ordinal (stub CUDA runtime)" : "stub CUDA runtime error";
}

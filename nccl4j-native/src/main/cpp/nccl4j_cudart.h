/*
 * nccl4j CUDA runtime shim.
 *
 * Opens a CUDA runtime (libcudart.so.13, libcudart.so.12, or a path) at run time with dlopen and resolves the
 * runtime calls nccl4j-core makes with dlsym, so that one build of nccl4j serves CUDA 12 and CUDA 13: the calls
 * used here have the same C signature in both majors. Nothing of CUDA is needed to build it; an entry point the
 * opened library lacks is a status (N4JC_MISSING_SYMBOL), never an unresolved symbol.
 *
 * Every wrapper takes plain C types (streams, events, graphs and addresses as pointers, handles written back as
 * int64_t) and returns the call's cudaError_t as an int (0 = cudaSuccess), or one of the negative statuses below.
 * The types are declared here as CUDA's headers define them (opaque pointers, enums as int); no CUDA header is
 * included. Compiled into the JNI library JavaCPP generates for org.nccl4j.jni.CudaNative, so everything is static.
 */
#ifndef NCCL4J_CUDART_H
#define NCCL4J_CUDART_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N4JC_NOT_LOADED (-1000)     /* no CUDA runtime has been opened */
#define N4JC_MISSING_SYMBOL (-1001) /* the opened runtime does not export this entry point */

/* The entry points, in the order of CudaNative.FUNCTIONS (Java). */
#define N4JC_FUNCTIONS(X)        \
  X(cudaRuntimeGetVersion)       \
  X(cudaDriverGetVersion)        \
  X(cudaGetDeviceCount)          \
  X(cudaSetDevice)               \
  X(cudaGetDevice)               \
  X(cudaMalloc)                  \
  X(cudaFree)                    \
  X(cudaMemcpy)                  \
  X(cudaMemset)                  \
  X(cudaStreamCreateWithFlags)   \
  X(cudaStreamDestroy)           \
  X(cudaStreamSynchronize)       \
  X(cudaStreamQuery)             \
  X(cudaStreamIsCapturing)       \
  X(cudaEventCreateWithFlags)    \
  X(cudaEventDestroy)            \
  X(cudaEventRecord)             \
  X(cudaEventSynchronize)        \
  X(cudaEventQuery)              \
  X(cudaEventElapsedTime)        \
  X(cudaStreamWaitEvent)         \
  X(cudaStreamBeginCapture)      \
  X(cudaStreamEndCapture)        \
  X(cudaGraphInstantiate)        \
  X(cudaGraphLaunch)             \
  X(cudaGraphExecDestroy)        \
  X(cudaGraphDestroy)            \
  X(cudaPointerGetAttributes)    \
  X(cudaGetErrorName)            \
  X(cudaGetErrorString)

#define N4JC_ENUM_ENTRY(name) N4JC_FN_##name,
enum { N4JC_FUNCTIONS(N4JC_ENUM_ENTRY) N4JC_FN_COUNT };
#undef N4JC_ENUM_ENTRY

#define N4JC_NAME_ENTRY(name) #name,
static const char* const n4jc_function_names[N4JC_FN_COUNT] = { N4JC_FUNCTIONS(N4JC_NAME_ENTRY) };
#undef N4JC_NAME_ENTRY

/* Loader state: written only by n4jc_open/n4jc_close, which Java serializes. */
static void* n4jc_handle = NULL;
static void* n4jc_fn[N4JC_FN_COUNT];
static char n4jc_path[PATH_MAX + 1];
static char n4jc_open_error[2048];

/* Closes the opened runtime, if any: only for a runtime refused after opening and for tests that switch runtimes. */
static int n4jc_close(void) {
  if (n4jc_handle) {
    dlclose(n4jc_handle);
  }
  n4jc_handle = NULL;
  memset(n4jc_fn, 0, sizeof(n4jc_fn));
  n4jc_path[0] = '\0';
  return 0;
}

/* Opens 'name' (a path, or a file name for the system's default search) and resolves every entry point it has.
 * Returns 0, or -1 with the reason in n4jc_open_message(). The library must export cudaRuntimeGetVersion to be taken
 * for a CUDA runtime. */
static int n4jc_open(const char* name) {
  n4jc_close();
  n4jc_open_error[0] = '\0';
  if (name == NULL || name[0] == '\0') {
    snprintf(n4jc_open_error, sizeof(n4jc_open_error), "empty library name");
    return -1;
  }
  dlerror();
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char* why = dlerror();
    snprintf(n4jc_open_error, sizeof(n4jc_open_error), "%s", why ? why : "dlopen failed");
    return -1;
  }
  void* version = dlsym(handle, "cudaRuntimeGetVersion");
  if (version == NULL) {
    snprintf(n4jc_open_error, sizeof(n4jc_open_error),
             "%s does not export cudaRuntimeGetVersion: it is not a CUDA runtime", name);
    dlclose(handle);
    return -1;
  }
  for (int i = 0; i < N4JC_FN_COUNT; i++) {
    n4jc_fn[i] = dlsym(handle, n4jc_function_names[i]);
  }
  Dl_info info;
  memset(&info, 0, sizeof(info));
  if (dladdr(version, &info) != 0 && info.dli_fname != NULL) {
    if (realpath(info.dli_fname, n4jc_path) == NULL) {
      snprintf(n4jc_path, sizeof(n4jc_path), "%s", info.dli_fname);
    }
  } else {
    snprintf(n4jc_path, sizeof(n4jc_path), "%s", name);
  }
  n4jc_handle = handle;
  return 0;
}

static const char* n4jc_open_message(void) { return n4jc_open_error; }
static const char* n4jc_loaded_path(void) { return n4jc_handle ? n4jc_path : NULL; }
static int n4jc_function_count(void) { return N4JC_FN_COUNT; }
static const char* n4jc_function_name(int i) {
  return (i >= 0 && i < N4JC_FN_COUNT) ? n4jc_function_names[i] : NULL;
}
static int n4jc_has_function(int i) { return (i >= 0 && i < N4JC_FN_COUNT && n4jc_fn[i] != NULL) ? 1 : 0; }

static inline int n4jc_absent(void) { return n4jc_handle ? N4JC_MISSING_SYMBOL : N4JC_NOT_LOADED; }

/* Resolves entry point 'name' as a function of type 'type' into 'f', or returns the status for its absence. */
#define N4JC_FN(type, name)                          \
  type f = (type)n4jc_fn[N4JC_FN_##name];            \
  if (f == NULL) return n4jc_absent()

typedef int (*n4jc_int_out)(int*);
typedef int (*n4jc_int_in)(int);
typedef int (*n4jc_ptr_in)(void*);
typedef int (*n4jc_ptr_ptr)(void*, void*);
typedef int (*n4jc_create)(void**, unsigned int);
typedef int (*n4jc_malloc_fn)(void**, size_t);
typedef int (*n4jc_memcpy_fn)(void*, const void*, size_t, int);
typedef int (*n4jc_memset_fn)(void*, int, size_t);
typedef int (*n4jc_capturing_fn)(void*, int*);
typedef int (*n4jc_elapsed_fn)(float*, void*, void*);
typedef int (*n4jc_wait_fn)(void*, void*, unsigned int);
typedef int (*n4jc_begin_fn)(void*, int);
typedef int (*n4jc_end_fn)(void*, void**);
typedef int (*n4jc_instantiate_fn)(void**, void*, unsigned long long);
typedef int (*n4jc_attributes_fn)(void*, const void*);

static int n4jc_cudaRuntimeGetVersion(int* v) { N4JC_FN(n4jc_int_out, cudaRuntimeGetVersion); return f(v); }
static int n4jc_cudaDriverGetVersion(int* v) { N4JC_FN(n4jc_int_out, cudaDriverGetVersion); return f(v); }
static int n4jc_cudaGetDeviceCount(int* n) { N4JC_FN(n4jc_int_out, cudaGetDeviceCount); return f(n); }
static int n4jc_cudaSetDevice(int d) { N4JC_FN(n4jc_int_in, cudaSetDevice); return f(d); }
static int n4jc_cudaGetDevice(int* d) { N4JC_FN(n4jc_int_out, cudaGetDevice); return f(d); }

static int n4jc_cudaMalloc(int64_t* address, size_t bytes) {
  N4JC_FN(n4jc_malloc_fn, cudaMalloc);
  void* p = NULL;
  int rc = f(&p, bytes);
  address[0] = rc == 0 ? (int64_t)(intptr_t)p : 0;
  return rc;
}
static int n4jc_cudaFree(void* p) { N4JC_FN(n4jc_ptr_in, cudaFree); return f(p); }
/* kind: cudaMemcpyKind (1 host to device, 2 device to host, 3 device to device, 4 default) */
static int n4jc_cudaMemcpy(void* dst, const void* src, size_t bytes, int kind) {
  N4JC_FN(n4jc_memcpy_fn, cudaMemcpy);
  return f(dst, src, bytes, kind);
}
static int n4jc_cudaMemset(void* p, int value, size_t bytes) {
  N4JC_FN(n4jc_memset_fn, cudaMemset);
  return f(p, value, bytes);
}

static int n4jc_cudaStreamCreateWithFlags(int64_t* stream, unsigned int flags) {
  N4JC_FN(n4jc_create, cudaStreamCreateWithFlags);
  void* s = NULL;
  int rc = f(&s, flags);
  stream[0] = rc == 0 ? (int64_t)(intptr_t)s : 0;
  return rc;
}
static int n4jc_cudaStreamDestroy(void* s) { N4JC_FN(n4jc_ptr_in, cudaStreamDestroy); return f(s); }
static int n4jc_cudaStreamSynchronize(void* s) { N4JC_FN(n4jc_ptr_in, cudaStreamSynchronize); return f(s); }
static int n4jc_cudaStreamQuery(void* s) { N4JC_FN(n4jc_ptr_in, cudaStreamQuery); return f(s); }
/* status: cudaStreamCaptureStatus (0 none, 1 active, 2 invalidated), an enum the size of int */
static int n4jc_cudaStreamIsCapturing(void* s, int* status) {
  N4JC_FN(n4jc_capturing_fn, cudaStreamIsCapturing);
  return f(s, status);
}

static int n4jc_cudaEventCreateWithFlags(int64_t* event, unsigned int flags) {
  N4JC_FN(n4jc_create, cudaEventCreateWithFlags);
  void* e = NULL;
  int rc = f(&e, flags);
  event[0] = rc == 0 ? (int64_t)(intptr_t)e : 0;
  return rc;
}
static int n4jc_cudaEventDestroy(void* e) { N4JC_FN(n4jc_ptr_in, cudaEventDestroy); return f(e); }
static int n4jc_cudaEventRecord(void* e, void* s) { N4JC_FN(n4jc_ptr_ptr, cudaEventRecord); return f(e, s); }
static int n4jc_cudaEventSynchronize(void* e) { N4JC_FN(n4jc_ptr_in, cudaEventSynchronize); return f(e); }
static int n4jc_cudaEventQuery(void* e) { N4JC_FN(n4jc_ptr_in, cudaEventQuery); return f(e); }
static int n4jc_cudaEventElapsedTime(float* ms, void* start, void* end) {
  N4JC_FN(n4jc_elapsed_fn, cudaEventElapsedTime);
  return f(ms, start, end);
}
static int n4jc_cudaStreamWaitEvent(void* s, void* e, unsigned int flags) {
  N4JC_FN(n4jc_wait_fn, cudaStreamWaitEvent);
  return f(s, e, flags);
}

/* mode: cudaStreamCaptureMode (0 global, 1 thread local, 2 relaxed) */
static int n4jc_cudaStreamBeginCapture(void* s, int mode) {
  N4JC_FN(n4jc_begin_fn, cudaStreamBeginCapture);
  return f(s, mode);
}
static int n4jc_cudaStreamEndCapture(void* s, int64_t* graph) {
  N4JC_FN(n4jc_end_fn, cudaStreamEndCapture);
  void* g = NULL;
  int rc = f(s, &g);
  graph[0] = rc == 0 ? (int64_t)(intptr_t)g : 0;
  return rc;
}
/* CUDA 12 and 13: cudaGraphInstantiate(cudaGraphExec_t*, cudaGraph_t, unsigned long long flags) */
static int n4jc_cudaGraphInstantiate(int64_t* exec, void* graph, unsigned long long flags) {
  N4JC_FN(n4jc_instantiate_fn, cudaGraphInstantiate);
  void* e = NULL;
  int rc = f(&e, graph, flags);
  exec[0] = rc == 0 ? (int64_t)(intptr_t)e : 0;
  return rc;
}
static int n4jc_cudaGraphLaunch(void* exec, void* s) { N4JC_FN(n4jc_ptr_ptr, cudaGraphLaunch); return f(exec, s); }
static int n4jc_cudaGraphExecDestroy(void* exec) { N4JC_FN(n4jc_ptr_in, cudaGraphExecDestroy); return f(exec); }
static int n4jc_cudaGraphDestroy(void* graph) { N4JC_FN(n4jc_ptr_in, cudaGraphDestroy); return f(graph); }

/* cudaPointerGetAttributes: out[0] = the memory type (0 unregistered host, 1 host, 2 device, 3 managed),
 * out[1] = the device. struct cudaPointerAttributes starts with (enum cudaMemoryType type; int device;) in CUDA 12
 * and 13; CUDA 13 appends reserved words, so the runtime writes into a zeroed buffer larger than either. */
static int n4jc_cudaPointerGetAttributes(const void* p, int* out) {
  N4JC_FN(n4jc_attributes_fn, cudaPointerGetAttributes);
  union { int ints[2]; unsigned char bytes[512]; void* align; } attr;
  memset(&attr, 0, sizeof(attr));
  int rc = f(&attr, p);
  out[0] = attr.ints[0];
  out[1] = attr.ints[1];
  return rc;
}

static const char* n4jc_cudaGetErrorName(int code) {
  const char* (*f)(int) = (const char* (*)(int))n4jc_fn[N4JC_FN_cudaGetErrorName];
  return f == NULL ? NULL : f(code);
}
static const char* n4jc_cudaGetErrorString(int code) {
  const char* (*f)(int) = (const char* (*)(int))n4jc_fn[N4JC_FN_cudaGetErrorString];
  return f == NULL ? NULL : f(code);
}

#undef N4JC_FN
#endif

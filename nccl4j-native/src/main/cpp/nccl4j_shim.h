/*
 * nccl4j native shim.
 *
 * Loads an NCCL library at run time with dlopen and resolves each host entry point with dlsym, so that
 * nothing of NCCL is needed to build nccl4j and an entry point missing from the loaded library is a status
 * code (N4J_MISSING_SYMBOL), never an unresolved symbol that kills the JVM.
 *
 * Every wrapper takes plain C types (handles and device addresses as pointers, enums as int) and returns the
 * ncclResult_t of the call as an int, or one of the negative N4J_* statuses below. Declarations of NCCL's
 * types are our own, written from NCCL's public documentation (the ABI of nccl.h): the library is never
 * included.
 *
 * This header is included by the JNI code that JavaCPP generates for org.nccl4j.jni.NcclNative; it is
 * compiled into that one shared library, so all its functions are static.
 */
#ifndef NCCL4J_SHIM_H
#define NCCL4J_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

/* ---- statuses of our own (NCCL's are 0..8, and 9 is ncclNumResults) ---- */
#define N4J_NOT_LOADED (-1000)     /* no NCCL library has been opened */
#define N4J_MISSING_SYMBOL (-1001) /* the loaded NCCL does not export this entry point */
#define N4J_OS_ERROR (-1002)       /* setenv/unsetenv failed; errno is returned by n4j_errno() */

/* ---- NCCL ABI facts (nccl.h) ---- */
#define N4J_UNIQUE_ID_BYTES 128
#define N4J_API_MAGIC 0xcafebeefu
#define N4J_CONFIG_UNDEF_INT INT_MIN
/* The ncclConfig_t layout written here is NCCL 2.30.7's (ncclConfig_v23000 in its nccl.h, the newest release),
 * and 'version' is NCCL_VERSION(2,30,7). One layout serves every NCCL >= 2.14 because
 *  - NCCL has only ever appended fields to ncclConfig_t (2.14.3: blocking; 2.17.1: cgaClusterSize, minCTAs,
 *    maxCTAs, netName; 2.18.1: splitShare; 2.26.2: trafficClass; 2.27.3: commName, collnetEnable, CTAPolicy,
 *    shrinkShare, nvlsCTAs; 2.28.3: nChannelsPerNetPeer, nvlinkCentricSched; 2.29.2: graphUsageMode,
 *    numRmaCtx; 2.30.3: maxP2pPeers; 2.30.7: graphStreamOrdering), so every older layout is a prefix of this one;
 *  - every NCCL since 2.14 copies min(config->size, its own sizeof(ncclConfig_t)) bytes of the config it is
 *    given (ncclCommInitRankConfig, split, shrink, grow, scalable init), and since 2.17 resets to its defaults
 *    the fields newer than config->version;
 * so an older NCCL reads the prefix it knows and never sees the rest: a field it lacks is silently ignored
 * (nccl4j-core refuses to pass a set field to an NCCL older than that field). Nothing may be declared here that
 * NCCL does not declare: a later NCCL appending a different field at that offset would read our value as its
 * own. The offsets are checked below. */
#define N4J_CONFIG_VERSION 23007

typedef struct { char internal[N4J_UNIQUE_ID_BYTES]; } n4j_unique_id;

typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
} n4j_config;

/* ncclConfig_t's offsets and size on LP64, as NCCL 2.30.7 lays it out (this header is compiled as C++ by JavaCPP). */
#ifdef __cplusplus
#define N4J_STATIC_ASSERT(cond, what) static_assert(cond, what)
#else
#define N4J_STATIC_ASSERT(cond, what) _Static_assert(cond, what)
#endif
N4J_STATIC_ASSERT(offsetof(n4j_config, blocking) == 16, "ncclConfig_t.blocking");
N4J_STATIC_ASSERT(offsetof(n4j_config, netName) == 32, "ncclConfig_t.netName");
N4J_STATIC_ASSERT(offsetof(n4j_config, splitShare) == 40, "ncclConfig_t.splitShare");
N4J_STATIC_ASSERT(offsetof(n4j_config, trafficClass) == 44, "ncclConfig_t.trafficClass");
N4J_STATIC_ASSERT(offsetof(n4j_config, commName) == 48, "ncclConfig_t.commName");
N4J_STATIC_ASSERT(offsetof(n4j_config, collnetEnable) == 56, "ncclConfig_t.collnetEnable");
N4J_STATIC_ASSERT(offsetof(n4j_config, graphStreamOrdering) == 92, "ncclConfig_t.graphStreamOrdering");
N4J_STATIC_ASSERT(sizeof(n4j_config) == 96, "sizeof(ncclConfig_t)");

/* The order of the int fields that Java passes in its int[] config (NcclNative.CFG_*): every int field of
 * n4j_config after 'version', netName and commName excluded. */
#define N4J_CONFIG_INTS 16

typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} n4j_sim_info;
#define N4J_SIM_INFO_MAGIC 0x74685283u
#define N4J_SIM_INFO_VERSION 22200

typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} n4j_wait_signal_desc;

/* ---- the entry points, in the order of org.nccl4j.jni.NcclFunction ---- */
#define N4J_FUNCTIONS(X)            \
  X(ncclGetVersion)                 \
  X(ncclGetUniqueId)                \
  X(ncclCommInitRank)               \
  X(ncclCommInitRankConfig)         \
  X(ncclCommInitAll)                \
  X(ncclCommInitRankScalable)       \
  X(ncclCommFinalize)               \
  X(ncclCommDestroy)                \
  X(ncclCommAbort)                  \
  X(ncclCommSplit)                  \
  X(ncclCommShrink)                 \
  X(ncclCommGetUniqueId)            \
  X(ncclCommGrow)                   \
  X(ncclCommRevoke)                 \
  X(ncclCommGetAsyncError)          \
  X(ncclGetLastError)               \
  X(ncclGetErrorString)             \
  X(ncclCommCount)                  \
  X(ncclCommCuDevice)               \
  X(ncclCommUserRank)               \
  X(ncclGroupStart)                 \
  X(ncclGroupEnd)                   \
  X(ncclGroupSimulateEnd)           \
  X(ncclAllReduce)                  \
  X(ncclBroadcast)                  \
  X(ncclReduce)                     \
  X(ncclAllGather)                  \
  X(ncclReduceScatter)              \
  X(ncclAlltoAll)                   \
  X(ncclGather)                     \
  X(ncclScatter)                    \
  X(ncclSend)                       \
  X(ncclRecv)                       \
  X(ncclRedOpCreatePreMulSum)       \
  X(ncclRedOpDestroy)               \
  X(ncclCommRegister)               \
  X(ncclCommDeregister)             \
  X(ncclCommWindowRegister)         \
  X(ncclCommWindowDeregister)       \
  X(ncclMemAlloc)                   \
  X(ncclMemFree)                    \
  X(ncclCommSuspend)                \
  X(ncclCommResume)                 \
  X(ncclCommMemStats)               \
  X(ncclWinGetUserPtr)              \
  X(ncclPutSignal)                  \
  X(ncclSignal)                     \
  X(ncclWaitSignal)

#define N4J_ENUM_ENTRY(name) N4J_FN_##name,
enum { N4J_FUNCTIONS(N4J_ENUM_ENTRY) N4J_FN_COUNT };
#undef N4J_ENUM_ENTRY

#define N4J_NAME_ENTRY(name) #name,
static const char* const n4j_function_names[N4J_FN_COUNT] = { N4J_FUNCTIONS(N4J_NAME_ENTRY) };
#undef N4J_NAME_ENTRY

/* ---- loader state: written only by n4j_open/n4j_close, which Java serializes ---- */
static void* n4j_handle = NULL;
static void* n4j_fn[N4J_FN_COUNT];
static char n4j_path[PATH_MAX + 1];
static char n4j_open_error[2048];
/* errno of this thread's last failed setenv/unsetenv: per thread, so that two threads' failures never mix */
static __thread int n4j_last_errno = 0;
/* 1 once a call that initializes NCCL (ncclGetUniqueId, an ncclCommInit*) has reached the loaded library: NCCL has
 * then read its environment variables, and setting them changes nothing. Reset when the library is closed. */
static volatile int n4j_initialized = 0;

static inline int n4j_absent(void) { return n4j_handle ? N4J_MISSING_SYMBOL : N4J_NOT_LOADED; }

/* Closes the loaded library, if any. Only for tests that switch libraries: NCCL itself is never unloaded
 * while communicators exist. */
static int n4j_close(void) {
  if (n4j_handle) {
    dlclose(n4j_handle);
  }
  n4j_handle = NULL;
  memset(n4j_fn, 0, sizeof(n4j_fn));
  n4j_path[0] = '\0';
  n4j_initialized = 0;
  return 0;
}

/* Whether a call that initializes NCCL has reached the loaded library (1) or not (0). */
static int n4j_nccl_initialized(void) { return n4j_initialized; }

/* Opens the NCCL library 'name' (a path, or a file name for the system's default search) and resolves every
 * entry point it has. Returns 0, or -1 with the reason in n4j_open_message(). The library must export
 * ncclGetVersion to be taken for NCCL. */
static int n4j_open(const char* name) {
  n4j_close();
  n4j_open_error[0] = '\0';
  if (name == NULL || name[0] == '\0') {
    snprintf(n4j_open_error, sizeof(n4j_open_error), "empty library name");
    return -1;
  }
  dlerror();
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char* why = dlerror();
    snprintf(n4j_open_error, sizeof(n4j_open_error), "%s", why ? why : "dlopen failed");
    return -1;
  }
  void* version = dlsym(handle, "ncclGetVersion");
  if (version == NULL) {
    snprintf(n4j_open_error, sizeof(n4j_open_error),
             "%s does not export ncclGetVersion: it is not an NCCL library", name);
    dlclose(handle);
    return -1;
  }
  for (int i = 0; i < N4J_FN_COUNT; i++) {
    n4j_fn[i] = dlsym(handle, n4j_function_names[i]);
  }
  Dl_info info;
  memset(&info, 0, sizeof(info));
  n4j_path[0] = '\0';
  if (dladdr(version, &info) != 0 && info.dli_fname != NULL) {
    if (realpath(info.dli_fname, n4j_path) == NULL) {
      snprintf(n4j_path, sizeof(n4j_path), "%s", info.dli_fname);
    }
  } else {
    snprintf(n4j_path, sizeof(n4j_path), "%s", name);
  }
  n4j_handle = handle;
  return 0;
}

static const char* n4j_open_message(void) { return n4j_open_error; }
static const char* n4j_loaded_path(void) { return n4j_handle ? n4j_path : NULL; }
static int n4j_is_loaded(void) { return n4j_handle != NULL; }
static int n4j_function_count(void) { return N4J_FN_COUNT; }
static const char* n4j_function_name(int i) { return (i >= 0 && i < N4J_FN_COUNT) ? n4j_function_names[i] : NULL; }
static int n4j_has_function(int i) { return (i >= 0 && i < N4J_FN_COUNT && n4j_fn[i] != NULL) ? 1 : 0; }
static int n4j_errno(void) { return n4j_last_errno; }
static int n4j_unique_id_bytes(void) { return N4J_UNIQUE_ID_BYTES; }
static int n4j_config_size(void) { return (int)sizeof(n4j_config); }

/* ---- the process environment, which NCCL reads and Java cannot write ---- */
static int n4j_setenv(const char* name, const char* value, int overwrite) {
  if (setenv(name, value, overwrite) != 0) {
    n4j_last_errno = errno;
    return N4J_OS_ERROR;
  }
  return 0;
}
static int n4j_unsetenv(const char* name) {
  if (unsetenv(name) != 0) {
    n4j_last_errno = errno;
    return N4J_OS_ERROR;
  }
  return 0;
}
static const char* n4j_getenv(const char* name) { return getenv(name); }
/* Ends the process at once with status: no atexit handler, no static destructor, no stdio flush. For a process
 * whose thread is inside NCCL's blocking initialization, which the C runtime's exit would tear down under it. */
static void n4j_exit_now(int status) { _exit(status); }

/* ---- helpers ---- */

/* Strings handed to NCCL inside a config must outlive the call (a nonblocking init may read them later):
 * each distinct string is copied once and kept for the life of the process. */
static pthread_mutex_t n4j_strings_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct n4j_string_node { struct n4j_string_node* next; char text[1]; } n4j_string_node;
static n4j_string_node* n4j_strings = NULL;

static const char* n4j_keep_string(const char* s) {
  if (s == NULL) return NULL;
  pthread_mutex_lock(&n4j_strings_lock);
  for (n4j_string_node* n = n4j_strings; n != NULL; n = n->next) {
    if (strcmp(n->text, s) == 0) {
      pthread_mutex_unlock(&n4j_strings_lock);
      return n->text;
    }
  }
  size_t len = strlen(s);
  n4j_string_node* node = (n4j_string_node*)malloc(sizeof(n4j_string_node) + len);
  if (node == NULL) {
    pthread_mutex_unlock(&n4j_strings_lock);
    return NULL;
  }
  memcpy(node->text, s, len + 1);
  node->next = n4j_strings;
  n4j_strings = node;
  pthread_mutex_unlock(&n4j_strings_lock);
  return node->text;
}

/* Fills 'c' from Java's ints (N4J_CONFIG_INTS of them, in n4j_config's order) and strings, and sets *out to c,
 * or to NULL when Java passed no config. Returns 0, or N4J_SYSTEM_ERROR when a name could not be kept (malloc
 * failed): the caller returns that, ncclSystemError (2), NCCL's own status for a failed system call, rather than
 * handing NCCL a config that silently lost the name. */
#define N4J_SYSTEM_ERROR 2
static int n4j_make_config(n4j_config* c, const int* ints, const char* netName, const char* commName,
                           n4j_config** out) {
  *out = NULL;
  if (ints == NULL) return 0;
  memset(c, 0, sizeof(*c));
  c->size = sizeof(*c);
  c->magic = N4J_API_MAGIC;
  c->version = N4J_CONFIG_VERSION;
  c->blocking = ints[0];
  c->cgaClusterSize = ints[1];
  c->minCTAs = ints[2];
  c->maxCTAs = ints[3];
  c->netName = n4j_keep_string(netName);
  if (netName != NULL && c->netName == NULL) return N4J_SYSTEM_ERROR;
  c->splitShare = ints[4];
  c->trafficClass = ints[5];
  c->commName = n4j_keep_string(commName);
  if (commName != NULL && c->commName == NULL) return N4J_SYSTEM_ERROR;
  c->collnetEnable = ints[6];
  c->CTAPolicy = ints[7];
  c->shrinkShare = ints[8];
  c->nvlsCTAs = ints[9];
  c->nChannelsPerNetPeer = ints[10];
  c->nvlinkCentricSched = ints[11];
  c->graphUsageMode = ints[12];
  c->numRmaCtx = ints[13];
  c->maxP2pPeers = ints[14];
  c->graphStreamOrdering = ints[15];
  *out = c;
  return 0;
}

static inline n4j_unique_id n4j_id_from(const signed char* bytes) {
  n4j_unique_id id;
  memcpy(id.internal, bytes, N4J_UNIQUE_ID_BYTES);
  return id;
}

/* Calls entry point 'name' through a function pointer of type 'ret (*)(params)', or returns the status
 * telling why it cannot. */
#define N4J_CALL(name, params, ...)                                 \
  do {                                                              \
    void* f_ = n4j_fn[N4J_FN_##name];                               \
    if (f_ == NULL) return n4j_absent();                            \
    return ((int(*) params)f_)(__VA_ARGS__);                        \
  } while (0)

/* N4J_CALL for an entry point that initializes NCCL, which reads its environment variables when it does. */
#define N4J_CALL_INIT(name, params, ...)                            \
  do {                                                              \
    if (n4j_fn[N4J_FN_##name] != NULL) n4j_initialized = 1;         \
    N4J_CALL(name, params, __VA_ARGS__);                            \
  } while (0)

/* ---- wrappers: version, ids, communicators ---- */

static int n4j_ncclGetVersion(int* version) {
  N4J_CALL(ncclGetVersion, (int*), version);
}

static int n4j_ncclGetUniqueId(signed char* id) {
  N4J_CALL_INIT(ncclGetUniqueId, (void*), id);
}

static int n4j_ncclCommInitRank(int64_t* comm, int nranks, const signed char* id, int rank) {
  N4J_CALL_INIT(ncclCommInitRank, (void**, int, n4j_unique_id, int), (void**)comm, nranks, n4j_id_from(id), rank);
}

static int n4j_ncclCommInitRankConfig(int64_t* comm, int nranks, const signed char* id, int rank,
                                      const int* cfg, const char* netName, const char* commName) {
  n4j_config c;
  n4j_config* cp;
  if (n4j_make_config(&c, cfg, netName, commName, &cp) != 0) return N4J_SYSTEM_ERROR;
  N4J_CALL_INIT(ncclCommInitRankConfig, (void**, int, n4j_unique_id, int, n4j_config*),
           (void**)comm, nranks, n4j_id_from(id), rank, cp);
}

static int n4j_ncclCommInitAll(int64_t* comms, int ndev, const int* devlist) {
  N4J_CALL_INIT(ncclCommInitAll, (void**, int, const int*), (void**)comms, ndev, devlist);
}

static int n4j_ncclCommInitRankScalable(int64_t* comm, int nranks, int rank, int nIds, const signed char* ids,
                                        const int* cfg, const char* netName, const char* commName) {
  n4j_config c;
  n4j_config* cp;
  if (n4j_make_config(&c, cfg, netName, commName, &cp) != 0) return N4J_SYSTEM_ERROR;
  N4J_CALL_INIT(ncclCommInitRankScalable, (void**, int, int, int, void*, n4j_config*),
           (void**)comm, nranks, rank, nIds, (void*)ids, cp);
}

static int n4j_ncclCommFinalize(void* comm) { N4J_CALL(ncclCommFinalize, (void*), comm); }
static int n4j_ncclCommDestroy(void* comm) { N4J_CALL(ncclCommDestroy, (void*), comm); }
static int n4j_ncclCommAbort(void* comm) { N4J_CALL(ncclCommAbort, (void*), comm); }

static int n4j_ncclCommSplit(void* comm, int color, int key, int64_t* newcomm,
                             const int* cfg, const char* netName, const char* commName) {
  n4j_config c;
  n4j_config* cp;
  if (n4j_make_config(&c, cfg, netName, commName, &cp) != 0) return N4J_SYSTEM_ERROR;
  N4J_CALL(ncclCommSplit, (void*, int, int, void**, n4j_config*), comm, color, key, (void**)newcomm, cp);
}

static int n4j_ncclCommShrink(void* comm, int* exclude, int excludeCount, int64_t* newcomm,
                              const int* cfg, const char* netName, const char* commName, int flags) {
  n4j_config c;
  n4j_config* cp;
  if (n4j_make_config(&c, cfg, netName, commName, &cp) != 0) return N4J_SYSTEM_ERROR;
  N4J_CALL(ncclCommShrink, (void*, int*, int, void**, n4j_config*, int),
           comm, exclude, excludeCount, (void**)newcomm, cp, flags);
}

static int n4j_ncclCommGetUniqueId(void* comm, signed char* id) {
  N4J_CALL(ncclCommGetUniqueId, (void*, void*), comm, id);
}

static int n4j_ncclCommGrow(void* comm, int nranks, const signed char* id, int rank, int64_t* newcomm,
                            const int* cfg, const char* netName, const char* commName) {
  n4j_config c;
  n4j_config* cp;
  if (n4j_make_config(&c, cfg, netName, commName, &cp) != 0) return N4J_SYSTEM_ERROR;
  N4J_CALL(ncclCommGrow, (void*, int, const void*, int, void**, n4j_config*),
           comm, nranks, (const void*)id, rank, (void**)newcomm, cp);
}

static int n4j_ncclCommRevoke(void* comm, int flags) { N4J_CALL(ncclCommRevoke, (void*, int), comm, flags); }

static int n4j_ncclCommGetAsyncError(void* comm, int* asyncError) {
  N4J_CALL(ncclCommGetAsyncError, (void*, int*), comm, asyncError);
}

static const char* n4j_ncclGetLastError(void* comm) {
  void* f = n4j_fn[N4J_FN_ncclGetLastError];
  return f ? ((const char* (*)(void*))f)(comm) : NULL;
}

static const char* n4j_ncclGetErrorString(int result) {
  void* f = n4j_fn[N4J_FN_ncclGetErrorString];
  return f ? ((const char* (*)(int))f)(result) : NULL;
}

static int n4j_ncclCommCount(void* comm, int* count) { N4J_CALL(ncclCommCount, (void*, int*), comm, count); }
static int n4j_ncclCommCuDevice(void* comm, int* device) { N4J_CALL(ncclCommCuDevice, (void*, int*), comm, device); }
static int n4j_ncclCommUserRank(void* comm, int* rank) { N4J_CALL(ncclCommUserRank, (void*, int*), comm, rank); }

/* ---- groups ---- */
static int n4j_ncclGroupStart(void) { N4J_CALL(ncclGroupStart, (void)); }
static int n4j_ncclGroupEnd(void) { N4J_CALL(ncclGroupEnd, (void)); }

static int n4j_ncclGroupSimulateEnd(float* estimatedTime) {
  n4j_sim_info info;
  info.size = sizeof(info);
  info.magic = N4J_SIM_INFO_MAGIC;
  info.version = N4J_SIM_INFO_VERSION;
  info.estimatedTime = -1.0f;
  void* f = n4j_fn[N4J_FN_ncclGroupSimulateEnd];
  if (f == NULL) return n4j_absent();
  int r = ((int (*)(n4j_sim_info*))f)(&info);
  if (estimatedTime != NULL) *estimatedTime = info.estimatedTime;
  return r;
}

/* ---- collectives and point-to-point (the hot path: one indirect call) ---- */
typedef void* n4j_ptr;

static int n4j_ncclAllReduce(const void* s, void* r, size_t n, int dt, int op, void* comm, void* stream) {
  N4J_CALL(ncclAllReduce, (const void*, void*, size_t, int, int, void*, void*), s, r, n, dt, op, comm, stream);
}
static int n4j_ncclBroadcast(const void* s, void* r, size_t n, int dt, int root, void* comm, void* stream) {
  N4J_CALL(ncclBroadcast, (const void*, void*, size_t, int, int, void*, void*), s, r, n, dt, root, comm, stream);
}
static int n4j_ncclReduce(const void* s, void* r, size_t n, int dt, int op, int root, void* comm, void* stream) {
  N4J_CALL(ncclReduce, (const void*, void*, size_t, int, int, int, void*, void*), s, r, n, dt, op, root, comm, stream);
}
static int n4j_ncclAllGather(const void* s, void* r, size_t n, int dt, void* comm, void* stream) {
  N4J_CALL(ncclAllGather, (const void*, void*, size_t, int, void*, void*), s, r, n, dt, comm, stream);
}
static int n4j_ncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, void* comm, void* stream) {
  N4J_CALL(ncclReduceScatter, (const void*, void*, size_t, int, int, void*, void*), s, r, n, dt, op, comm, stream);
}
static int n4j_ncclAlltoAll(const void* s, void* r, size_t n, int dt, void* comm, void* stream) {
  N4J_CALL(ncclAlltoAll, (const void*, void*, size_t, int, void*, void*), s, r, n, dt, comm, stream);
}
static int n4j_ncclGather(const void* s, void* r, size_t n, int dt, int root, void* comm, void* stream) {
  N4J_CALL(ncclGather, (const void*, void*, size_t, int, int, void*, void*), s, r, n, dt, root, comm, stream);
}
static int n4j_ncclScatter(const void* s, void* r, size_t n, int dt, int root, void* comm, void* stream) {
  N4J_CALL(ncclScatter, (const void*, void*, size_t, int, int, void*, void*), s, r, n, dt, root, comm, stream);
}
static int n4j_ncclSend(const void* s, size_t n, int dt, int peer, void* comm, void* stream) {
  N4J_CALL(ncclSend, (const void*, size_t, int, int, void*, void*), s, n, dt, peer, comm, stream);
}
static int n4j_ncclRecv(void* r, size_t n, int dt, int peer, void* comm, void* stream) {
  N4J_CALL(ncclRecv, (void*, size_t, int, int, void*, void*), r, n, dt, peer, comm, stream);
}

/* ---- reduction operators ---- */
static int n4j_ncclRedOpCreatePreMulSum(int* op, void* scalar, int dt, int residence, void* comm) {
  N4J_CALL(ncclRedOpCreatePreMulSum, (int*, void*, int, int, void*), op, scalar, dt, residence, comm);
}
/* Host-immediate variant: the scalar's bytes come from Java (8 bytes, the low ones used for 2- and 4-byte
 * types); NCCL reads them before returning. */
static int n4j_ncclRedOpCreatePreMulSumHost(int* op, int64_t scalarBits, int dt, void* comm) {
  int64_t bits = scalarBits;
  N4J_CALL(ncclRedOpCreatePreMulSum, (int*, void*, int, int, void*), op, (void*)&bits, dt, 1, comm);
}
static int n4j_ncclRedOpDestroy(int op, void* comm) { N4J_CALL(ncclRedOpDestroy, (int, void*), op, comm); }

/* ---- registration and memory ---- */
static int n4j_ncclCommRegister(void* comm, void* buff, size_t size, int64_t* handle) {
  N4J_CALL(ncclCommRegister, (void*, void*, size_t, void**), comm, buff, size, (void**)handle);
}
static int n4j_ncclCommDeregister(void* comm, void* handle) {
  N4J_CALL(ncclCommDeregister, (void*, void*), comm, handle);
}
static int n4j_ncclCommWindowRegister(void* comm, void* buff, size_t size, int64_t* win, int flags) {
  N4J_CALL(ncclCommWindowRegister, (void*, void*, size_t, void**, int), comm, buff, size, (void**)win, flags);
}
static int n4j_ncclCommWindowDeregister(void* comm, void* win) {
  N4J_CALL(ncclCommWindowDeregister, (void*, void*), comm, win);
}
static int n4j_ncclMemAlloc(int64_t* ptr, size_t size) {
  N4J_CALL(ncclMemAlloc, (void**, size_t), (void**)ptr, size);
}
static int n4j_ncclMemFree(void* ptr) { N4J_CALL(ncclMemFree, (void*), ptr); }

/* ---- suspend/resume, memory statistics, windows, one-sided ---- */
static int n4j_ncclCommSuspend(void* comm, int flags) { N4J_CALL(ncclCommSuspend, (void*, int), comm, flags); }
static int n4j_ncclCommResume(void* comm) { N4J_CALL(ncclCommResume, (void*), comm); }
static int n4j_ncclCommMemStats(void* comm, int stat, int64_t* value) {
  N4J_CALL(ncclCommMemStats, (void*, int, uint64_t*), comm, stat, (uint64_t*)value);
}
static int n4j_ncclWinGetUserPtr(void* comm, void* win, int64_t* ptr) {
  N4J_CALL(ncclWinGetUserPtr, (void*, void*, void**), comm, win, (void**)ptr);
}
static int n4j_ncclPutSignal(const void* local, size_t n, int dt, int peer, void* peerWin, size_t offset,
                             int sigIdx, int ctx, int flags, void* comm, void* stream) {
  N4J_CALL(ncclPutSignal, (const void*, size_t, int, int, void*, size_t, int, int, unsigned int, void*, void*),
           local, n, dt, peer, peerWin, offset, sigIdx, ctx, (unsigned int)flags, comm, stream);
}
static int n4j_ncclSignal(int peer, int sigIdx, int ctx, int flags, void* comm, void* stream) {
  N4J_CALL(ncclSignal, (int, int, int, unsigned int, void*, void*),
           peer, sigIdx, ctx, (unsigned int)flags, comm, stream);
}
/* 'descs' holds nDesc groups of 4 ints: opCnt, peer, sigIdx, ctx (ncclWaitSignalDesc_t's layout). */
static int n4j_ncclWaitSignal(int nDesc, const int* descs, void* comm, void* stream) {
  N4J_CALL(ncclWaitSignal, (int, void*, void*, void*), nDesc, (void*)descs, comm, stream);
}

#undef N4J_CALL
#endif /* NCCL4J_SHIM_H */

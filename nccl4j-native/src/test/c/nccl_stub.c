/*
 * A stub NCCL for nccl4j's CPU tests (never shipped). Each entry point appends one line to the file named by
 * NCCL_STUB_LOG, "<function> <arg>=<value> ...", with pointers as 0x<hex>, and returns a programmed result:
 * NCCL_STUB_RESULT_<function> if set, else NCCL_STUB_RESULT, else 0 (ncclSuccess). Tests set those variables
 * through nccl4j's own setenv, so that no Java code other than nccl4j's runs between the test and the stub.
 *
 * Communicators made by the stub are heap blocks the stub remembers; the queries (count, device, rank) read
 * them and refuse any other handle with ncclInvalidArgument.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#ifndef STUB_VERSION /* the build may set it: libnccl-stub-2.30.7.so is the full stub reporting 23007 */
#ifdef STUB_OLD
#define STUB_VERSION 21903
#else
#define STUB_VERSION 22803
#endif
#endif

#define EXPORT __attribute__((visibility("default")))

typedef struct { char internal[128]; } stub_uid;
/* ncclConfig_t as NCCL 2.30.7 declares it (the newest layout). The offsets are asserted independently of the
 * shim's copy of the struct, so that the stub's record of each field proves where the shim wrote it. */
typedef struct {
  size_t size; unsigned int magic; unsigned int version;
  int blocking; int cgaClusterSize; int minCTAs; int maxCTAs; const char* netName; int splitShare;
  int trafficClass; const char* commName; int collnetEnable; int CTAPolicy; int shrinkShare; int nvlsCTAs;
  int nChannelsPerNetPeer; int nvlinkCentricSched; int graphUsageMode; int numRmaCtx; int maxP2pPeers;
  int graphStreamOrdering;
} stub_config;
#define STUB_AT(field, offset) _Static_assert(offsetof(stub_config, field) == (offset), #field)
STUB_AT(size, 0); STUB_AT(magic, 8); STUB_AT(version, 12); STUB_AT(blocking, 16); STUB_AT(cgaClusterSize, 20);
STUB_AT(minCTAs, 24); STUB_AT(maxCTAs, 28); STUB_AT(netName, 32); STUB_AT(splitShare, 40); STUB_AT(trafficClass, 44);
STUB_AT(commName, 48); STUB_AT(collnetEnable, 56); STUB_AT(CTAPolicy, 60); STUB_AT(shrinkShare, 64);
STUB_AT(nvlsCTAs, 68); STUB_AT(nChannelsPerNetPeer, 72); STUB_AT(nvlinkCentricSched, 76); STUB_AT(graphUsageMode, 80);
STUB_AT(numRmaCtx, 84); STUB_AT(maxP2pPeers, 88); STUB_AT(graphStreamOrdering, 92);
_Static_assert(sizeof(stub_config) == 96, "sizeof(ncclConfig_t)");
typedef struct { size_t size; unsigned int magic; unsigned int version; float estimatedTime; } stub_sim_info;
typedef struct { int opCnt; int peer; int sigIdx; int ctx; } stub_wait_desc;

#define STUB_COMM_MAGIC 0x5354554243304d4dULL
typedef struct { uint64_t magic; int nranks; int rank; int dev; } stub_comm;

#define MAX_COMMS 16384
static stub_comm* comms[MAX_COMMS];
static int counter = 0;
static char last_function[64] = "none";

static void logf_(const char* fn, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
#include <time.h>
static void logf_(const char* fn, const char* fmt, ...) {
  snprintf(last_function, sizeof(last_function), "%s", fn);
  const char* path = getenv("NCCL_STUB_LOG");
  if (path == NULL || path[0] == '\0') return;
  FILE* f = fopen(path, "a");
  if (f == NULL) return;
  fprintf(f, "%s", fn);
  if (fmt[0] != '\0') {
    fputc(' ', f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
  }
  fputc('\n', f);
  fclose(f);
}

static int result_for(const char* fn) {
  char name[128];
  /* NCCL_STUB_SLEEP_MS_<function>: the call blocks that long first (a destroy that waits for a peer, say) */
  snprintf(name, sizeof(name), "NCCL_STUB_SLEEP_MS_%s", fn);
  const char* sleep_ms = getenv(name);
  if (sleep_ms != NULL) {
    long ms = atol(sleep_ms);
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) { }
  }
  snprintf(name, sizeof(name), "NCCL_STUB_RESULT_%s", fn);
  const char* v = getenv(name);
  if (v == NULL) v = getenv("NCCL_STUB_RESULT");
  return v ? atoi(v) : 0;
}

static unsigned long long P(const void* p) { return (unsigned long long)(uintptr_t)p; }

static stub_comm* new_comm(int nranks, int rank, int dev) {
  stub_comm* c = (stub_comm*)calloc(1, sizeof(stub_comm));
  c->magic = STUB_COMM_MAGIC; c->nranks = nranks; c->rank = rank; c->dev = dev;
  /* ranks' threads make communicators at once (recover's rendezvous, say): a slot is claimed atomically */
  for (int i = 0; i < MAX_COMMS; i++) if (__sync_bool_compare_and_swap(&comms[i], NULL, c)) break;
  return c;
}
static stub_comm* find_comm(const void* p) {
  if (p == NULL) return NULL;
  for (int i = 0; i < MAX_COMMS; i++) if (comms[i] == p) return comms[i];
  return NULL;
}
static void free_comm(void* p) {
  for (int i = 0; i < MAX_COMMS; i++) {
    stub_comm* c = comms[i];
    if (c == p && __sync_bool_compare_and_swap(&comms[i], c, NULL)) { free(c); return; }
  }
}

static void hex(const void* data, size_t n, char* out) {
  static const char* d = "0123456789abcdef";
  const unsigned char* b = (const unsigned char*)data;
  for (size_t i = 0; i < n; i++) { out[2 * i] = d[b[i] >> 4]; out[2 * i + 1] = d[b[i] & 15]; }
  out[2 * n] = '\0';
}

static void config_text(const stub_config* c, char* out, size_t n) {
  if (c == NULL) { snprintf(out, n, "config=null"); return; }
  snprintf(out, n,
           "config.size=%zu config.magic=0x%x config.version=%u blocking=%d cgaClusterSize=%d minCTAs=%d "
           "maxCTAs=%d netName=%s splitShare=%d trafficClass=%d commName=%s collnetEnable=%d CTAPolicy=%d "
           "shrinkShare=%d nvlsCTAs=%d nChannelsPerNetPeer=%d nvlinkCentricSched=%d graphUsageMode=%d "
           "numRmaCtx=%d maxP2pPeers=%d graphStreamOrdering=%d",
           c->size, c->magic, c->version, c->blocking, c->cgaClusterSize, c->minCTAs, c->maxCTAs,
           c->netName ? c->netName : "(null)", c->splitShare, c->trafficClass,
           c->commName ? c->commName : "(null)", c->collnetEnable, c->CTAPolicy, c->shrinkShare, c->nvlsCTAs,
           c->nChannelsPerNetPeer, c->nvlinkCentricSched, c->graphUsageMode, c->numRmaCtx, c->maxP2pPeers,
           c->graphStreamOrdering);
}

/* ---------------- version, ids, communicators ---------------- */

EXPORT int ncclGetVersion(int* version) {
  const char* v = getenv("NCCL_STUB_VERSION");
  *version = v ? atoi(v) : STUB_VERSION;
  logf_("ncclGetVersion", "%s", "");
  return result_for("ncclGetVersion");
}

EXPORT int ncclGetUniqueId(stub_uid* id) {
  const char* s = getenv("NCCL_STUB_ID_SEED");
  int seed = s ? atoi(s) : 1;
  for (int i = 0; i < 128; i++) id->internal[i] = (char)((i * 7 + seed) & 0xff);
  logf_("ncclGetUniqueId", "id=0x%llx", P(id));
  return result_for("ncclGetUniqueId");
}

EXPORT int ncclCommInitRank(void** comm, int nranks, stub_uid id, int rank) {
  char h[257];
  hex(id.internal, 128, h);
  int r = result_for("ncclCommInitRank");
  *comm = r == 0 ? new_comm(nranks, rank, 0) : NULL;
  logf_("ncclCommInitRank", "nranks=%d rank=%d id=%s", nranks, rank, h);
  return r;
}

EXPORT int ncclCommInitRankConfig(void** comm, int nranks, stub_uid id, int rank, stub_config* config) {
  char h[257], c[2048];
  hex(id.internal, 128, h);
  config_text(config, c, sizeof(c));
  int r = result_for("ncclCommInitRankConfig");
  /* ncclInProgress (7): a nonblocking init under way has a handle already */
  *comm = (r == 0 || r == 7) ? new_comm(nranks, rank, 0) : NULL;
  logf_("ncclCommInitRankConfig", "nranks=%d rank=%d id=%s %s", nranks, rank, h, c);
  return r;
}

EXPORT int ncclCommInitAll(void** out, int ndev, const int* devlist) {
  char devs[512] = "null";
  if (devlist != NULL) {
    devs[0] = '\0';
    for (int i = 0; i < ndev && i < 64; i++) {
      char one[16];
      snprintf(one, sizeof(one), i ? ",%d" : "%d", devlist[i]);
      strncat(devs, one, sizeof(devs) - strlen(devs) - 1);
    }
  }
  int r = result_for("ncclCommInitAll");
  for (int i = 0; i < ndev; i++) out[i] = r == 0 ? new_comm(ndev, i, devlist ? devlist[i] : i) : NULL;
  logf_("ncclCommInitAll", "ndev=%d devlist=%s", ndev, devs);
  return r;
}

EXPORT int ncclCommFinalize(void* comm) { logf_("ncclCommFinalize", "comm=0x%llx", P(comm)); return result_for("ncclCommFinalize"); }

EXPORT int ncclCommDestroy(void* comm) {
  logf_("ncclCommDestroy", "comm=0x%llx", P(comm));
  int r = result_for("ncclCommDestroy");
  if (r == 0) free_comm(comm);
  return r;
}

EXPORT int ncclCommAbort(void* comm) {
  logf_("ncclCommAbort", "comm=0x%llx", P(comm));
  int r = result_for("ncclCommAbort");
  if (r == 0) free_comm(comm);
  return r;
}

EXPORT int ncclCommSplit(void* comm, int color, int key, void** newcomm, stub_config* config) {
  char c[2048];
  config_text(config, c, sizeof(c));
  int r = result_for("ncclCommSplit");
  stub_comm* parent = find_comm(comm);
  *newcomm = (r == 0 && color >= 0) ? new_comm(1, 0, parent ? parent->dev : 0) : NULL;
  logf_("ncclCommSplit", "comm=0x%llx color=%d key=%d %s", P(comm), color, key, c);
  return r;
}

EXPORT int ncclCommGetAsyncError(void* comm, int* asyncError) {
  const char* v = getenv("NCCL_STUB_ASYNC_ERROR");
  *asyncError = v ? atoi(v) : 0;
  logf_("ncclCommGetAsyncError", "comm=0x%llx", P(comm));
  return result_for("ncclCommGetAsyncError");
}

EXPORT const char* ncclGetLastError(void* comm) {
  static char text[160];
  snprintf(text, sizeof(text), "stub last error after %s", last_function);
  logf_("ncclGetLastError", "comm=0x%llx", P(comm));
  return text;
}

EXPORT const char* ncclGetErrorString(int result) {
  static char text[64];
  snprintf(text, sizeof(text), "stub error string %d", result);
  return text;
}

EXPORT int ncclCommCount(void* comm, int* count) {
  stub_comm* c = find_comm(comm);
  logf_("ncclCommCount", "comm=0x%llx", P(comm));
  if (c == NULL) return 4;
  *count = c->nranks;
  return result_for("ncclCommCount");
}
EXPORT int ncclCommCuDevice(void* comm, int* dev) {
  stub_comm* c = find_comm(comm);
  logf_("ncclCommCuDevice", "comm=0x%llx", P(comm));
  if (c == NULL) return 4;
  *dev = c->dev;
  return result_for("ncclCommCuDevice");
}
EXPORT int ncclCommUserRank(void* comm, int* rank) {
  stub_comm* c = find_comm(comm);
  logf_("ncclCommUserRank", "comm=0x%llx", P(comm));
  if (c == NULL) return 4;
  *rank = c->rank;
  return result_for("ncclCommUserRank");
}

/* ---------------- groups ---------------- */
EXPORT int ncclGroupStart(void) { logf_("ncclGroupStart", "%s", ""); return result_for("ncclGroupStart"); }
EXPORT int ncclGroupEnd(void) { logf_("ncclGroupEnd", "%s", ""); return result_for("ncclGroupEnd"); }

/* ---------------- collectives ---------------- */
#define COLL_FMT "sendbuff=0x%llx recvbuff=0x%llx count=%zu datatype=%d"
EXPORT int ncclAllReduce(const void* s, void* r, size_t n, int dt, int op, void* comm, void* stream) {
  logf_("ncclAllReduce", COLL_FMT " op=%d comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, op, P(comm), P(stream));
  return result_for("ncclAllReduce");
}
EXPORT int ncclBroadcast(const void* s, void* r, size_t n, int dt, int root, void* comm, void* stream) {
  logf_("ncclBroadcast", COLL_FMT " root=%d comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, root, P(comm), P(stream));
  return result_for("ncclBroadcast");
}
EXPORT int ncclReduce(const void* s, void* r, size_t n, int dt, int op, int root, void* comm, void* stream) {
  logf_("ncclReduce", COLL_FMT " op=%d root=%d comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, op, root, P(comm), P(stream));
  return result_for("ncclReduce");
}
EXPORT int ncclAllGather(const void* s, void* r, size_t n, int dt, void* comm, void* stream) {
  logf_("ncclAllGather", COLL_FMT " comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, P(comm), P(stream));
  return result_for("ncclAllGather");
}
EXPORT int ncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, void* comm, void* stream) {
  logf_("ncclReduceScatter", COLL_FMT " op=%d comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, op, P(comm), P(stream));
  return result_for("ncclReduceScatter");
}
EXPORT int ncclSend(const void* s, size_t n, int dt, int peer, void* comm, void* stream) {
  logf_("ncclSend", "sendbuff=0x%llx count=%zu datatype=%d peer=%d comm=0x%llx stream=0x%llx", P(s), n, dt, peer, P(comm), P(stream));
  return result_for("ncclSend");
}
EXPORT int ncclRecv(void* r, size_t n, int dt, int peer, void* comm, void* stream) {
  logf_("ncclRecv", "recvbuff=0x%llx count=%zu datatype=%d peer=%d comm=0x%llx stream=0x%llx", P(r), n, dt, peer, P(comm), P(stream));
  return result_for("ncclRecv");
}

/* ---------------- reduction operators ---------------- */
static size_t type_size(int dt) {
  switch (dt) {
    case 0: case 1: case 10: case 11: return 1;
    case 6: case 9: return 2;
    case 2: case 3: case 7: return 4;
    default: return 8;
  }
}
EXPORT int ncclRedOpCreatePreMulSum(int* op, void* scalar, int dt, int residence, void* comm) {
  unsigned long long bits = 0;
  if (residence == 1 && scalar != NULL) memcpy(&bits, scalar, type_size(dt));
  int r = result_for("ncclRedOpCreatePreMulSum");
  if (r == 0) *op = 5 + (__sync_fetch_and_add(&counter, 1) % 1000);
  if (residence == 1) {
    logf_("ncclRedOpCreatePreMulSum", "scalar_bits=0x%llx datatype=%d residence=%d comm=0x%llx", bits, dt, residence, P(comm));
  } else {
    logf_("ncclRedOpCreatePreMulSum", "scalar=0x%llx datatype=%d residence=%d comm=0x%llx", P(scalar), dt, residence, P(comm));
  }
  return r;
}
EXPORT int ncclRedOpDestroy(int op, void* comm) {
  logf_("ncclRedOpDestroy", "op=%d comm=0x%llx", op, P(comm));
  return result_for("ncclRedOpDestroy");
}

/* ---------------- registration and memory (2.19) ---------------- */
EXPORT int ncclCommRegister(void* comm, void* buff, size_t size, void** handle) {
  *handle = (void*)(uintptr_t)(0xB0000000ULL + (unsigned)(__sync_fetch_and_add(&counter, 1)));
  logf_("ncclCommRegister", "comm=0x%llx buff=0x%llx size=%zu", P(comm), P(buff), size);
  return result_for("ncclCommRegister");
}
EXPORT int ncclCommDeregister(void* comm, void* handle) {
  logf_("ncclCommDeregister", "comm=0x%llx handle=0x%llx", P(comm), P(handle));
  return result_for("ncclCommDeregister");
}
EXPORT int ncclMemAlloc(void** ptr, size_t size) {
  *ptr = (void*)(uintptr_t)(0xA0000000ULL + (unsigned)(__sync_fetch_and_add(&counter, 1)) * 0x1000ULL);
  logf_("ncclMemAlloc", "size=%zu", size);
  return result_for("ncclMemAlloc");
}
EXPORT int ncclMemFree(void* ptr) {
  logf_("ncclMemFree", "ptr=0x%llx", P(ptr));
  return result_for("ncclMemFree");
}

#ifndef STUB_OLD
/* ---------------- entry points newer than NCCL 2.19 ---------------- */
EXPORT int ncclCommInitRankScalable(void** comm, int nranks, int rank, int nIds, stub_uid* ids, stub_config* config) {
  char c[2048];
  config_text(config, c, sizeof(c));
  char first[257] = "", last[257] = "";
  if (nIds > 0) { hex(ids[0].internal, 128, first); hex(ids[nIds - 1].internal, 128, last); }
  int r = result_for("ncclCommInitRankScalable");
  *comm = r == 0 ? new_comm(nranks, rank, 0) : NULL;
  logf_("ncclCommInitRankScalable", "nranks=%d rank=%d nIds=%d firstId=%s lastId=%s %s", nranks, rank, nIds, first, last, c);
  return r;
}
EXPORT int ncclCommShrink(void* comm, int* exclude, int count, void** newcomm, stub_config* config, int flags) {
  char c[2048], list[512] = "";
  config_text(config, c, sizeof(c));
  for (int i = 0; i < count && i < 64; i++) {
    char one[16];
    snprintf(one, sizeof(one), i ? ",%d" : "%d", exclude[i]);
    strncat(list, one, sizeof(list) - strlen(list) - 1);
  }
  int r = result_for("ncclCommShrink");
  stub_comm* parent = find_comm(comm);
  *newcomm = r == 0 ? new_comm(parent ? parent->nranks - count : 1, 0, parent ? parent->dev : 0) : NULL;
  logf_("ncclCommShrink", "comm=0x%llx exclude=%s count=%d flags=%d %s", P(comm), list, count, flags, c);
  return r;
}
EXPORT int ncclCommGetUniqueId(void* comm, stub_uid* id) {
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(255 - i);
  logf_("ncclCommGetUniqueId", "comm=0x%llx", P(comm));
  return result_for("ncclCommGetUniqueId");
}
EXPORT int ncclCommGrow(void* comm, int nranks, const stub_uid* id, int rank, void** newcomm, stub_config* config) {
  char c[2048], h[257] = "null";
  config_text(config, c, sizeof(c));
  if (id != NULL) hex(id->internal, 128, h);
  int r = result_for("ncclCommGrow");
  *newcomm = r == 0 ? new_comm(nranks, rank < 0 ? 0 : rank, 0) : NULL;
  logf_("ncclCommGrow", "comm=0x%llx nranks=%d rank=%d id=%s %s", P(comm), nranks, rank, h, c);
  return r;
}
EXPORT int ncclCommRevoke(void* comm, int flags) {
  logf_("ncclCommRevoke", "comm=0x%llx flags=%d", P(comm), flags);
  return result_for("ncclCommRevoke");
}
EXPORT int ncclGroupSimulateEnd(stub_sim_info* info) {
  logf_("ncclGroupSimulateEnd", "size=%zu magic=0x%x version=%u", info->size, info->magic, info->version);
  info->estimatedTime = 42.5f;
  return result_for("ncclGroupSimulateEnd");
}
EXPORT int ncclAlltoAll(const void* s, void* r, size_t n, int dt, void* comm, void* stream) {
  logf_("ncclAlltoAll", COLL_FMT " comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, P(comm), P(stream));
  return result_for("ncclAlltoAll");
}
EXPORT int ncclGather(const void* s, void* r, size_t n, int dt, int root, void* comm, void* stream) {
  logf_("ncclGather", COLL_FMT " root=%d comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, root, P(comm), P(stream));
  return result_for("ncclGather");
}
EXPORT int ncclScatter(const void* s, void* r, size_t n, int dt, int root, void* comm, void* stream) {
  logf_("ncclScatter", COLL_FMT " root=%d comm=0x%llx stream=0x%llx", P(s), P(r), n, dt, root, P(comm), P(stream));
  return result_for("ncclScatter");
}
EXPORT int ncclCommWindowRegister(void* comm, void* buff, size_t size, void** win, int flags) {
  *win = (void*)(uintptr_t)(0xC0000000ULL + (unsigned)(__sync_fetch_and_add(&counter, 1)));
  logf_("ncclCommWindowRegister", "comm=0x%llx buff=0x%llx size=%zu flags=%d", P(comm), P(buff), size, flags);
  return result_for("ncclCommWindowRegister");
}
EXPORT int ncclCommWindowDeregister(void* comm, void* win) {
  logf_("ncclCommWindowDeregister", "comm=0x%llx window=0x%llx", P(comm), P(win));
  return result_for("ncclCommWindowDeregister");
}
EXPORT int ncclCommSuspend(void* comm, int flags) {
  logf_("ncclCommSuspend", "comm=0x%llx flags=%d", P(comm), flags);
  return result_for("ncclCommSuspend");
}
EXPORT int ncclCommResume(void* comm) {
  logf_("ncclCommResume", "comm=0x%llx", P(comm));
  return result_for("ncclCommResume");
}
EXPORT int ncclCommMemStats(void* comm, int stat, uint64_t* value) {
  *value = (uint64_t)stat * 1000 + 7;
  logf_("ncclCommMemStats", "comm=0x%llx stat=%d", P(comm), stat);
  return result_for("ncclCommMemStats");
}
EXPORT int ncclWinGetUserPtr(void* comm, void* win, void** ptr) {
  *ptr = (void*)(uintptr_t)0xD0000000ULL;
  logf_("ncclWinGetUserPtr", "comm=0x%llx window=0x%llx", P(comm), P(win));
  return result_for("ncclWinGetUserPtr");
}
EXPORT int ncclPutSignal(const void* local, size_t n, int dt, int peer, void* peerWin, size_t offset, int sigIdx,
                         int ctx, unsigned int flags, void* comm, void* stream) {
  logf_("ncclPutSignal", "localbuff=0x%llx count=%zu datatype=%d peer=%d peerWin=0x%llx offset=%zu sigIdx=%d ctx=%d flags=%u comm=0x%llx stream=0x%llx",
        P(local), n, dt, peer, P(peerWin), offset, sigIdx, ctx, flags, P(comm), P(stream));
  return result_for("ncclPutSignal");
}
EXPORT int ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, void* comm, void* stream) {
  logf_("ncclSignal", "peer=%d sigIdx=%d ctx=%d flags=%u comm=0x%llx stream=0x%llx", peer, sigIdx, ctx, flags, P(comm), P(stream));
  return result_for("ncclSignal");
}
EXPORT int ncclWaitSignal(int nDesc, stub_wait_desc* descs, void* comm, void* stream) {
  char list[512] = "";
  for (int i = 0; i < nDesc && i < 16; i++) {
    char one[64];
    snprintf(one, sizeof(one), "%s%d/%d/%d/%d", i ? "," : "", descs[i].opCnt, descs[i].peer, descs[i].sigIdx, descs[i].ctx);
    strncat(list, one, sizeof(list) - strlen(list) - 1);
  }
  logf_("ncclWaitSignal", "nDesc=%d descs=%s comm=0x%llx stream=0x%llx", nDesc, list, P(comm), P(stream));
  return result_for("ncclWaitSignal");
}
#endif

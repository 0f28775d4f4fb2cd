/*
 * nccl_perf_baseline: the native twin of nccl4j-perf (org.nccl4j.tools.perf.Perf), written in plain C
 * against nccl.h, the CUDA runtime and MPI, so that nccl4j's numbers can be laid beside those of a C program
 * that makes the same calls in the same loop.
 *
 * One process per GPU under mpirun; rank 0 makes the NCCL unique id and MPI_Bcast gives it to the others. The
 * flags, the sizes, the measuring loop, the data check, the text columns and the -J JSON are those of
 * nccl4j-perf (which are nccl-tests' flags and columns); see nccl4j-tools/.../perf/Operation.java for the
 * size rules and PerfArgs.java for the flags: the operation first as nccl-tests' program (all_reduce_perf), or
 * --ops for several; -t (threads per process) and -g other than 1 are not supported here (one process per GPU).
 *
 * Build: scripts/bench/native/build.sh (nvcc, NCCL, Open MPI). Run:
 *   mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE scripts/bench/native/build/nccl_perf_baseline all_reduce_perf -b 8 -e 128M -f 2
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ errors */

static int g_rank = 0;
/* --init_repeats: how many, and the median, min and max of their times (ms) */
static int g_init_repeats = 0;
static double g_init_median = 0, g_init_min = 0, g_init_max = 0;

static int cmp_double(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b ? 1 : 0;
}

/* the p-th percentile of n sorted values by nearest rank (the ceil(p/100 n)-th smallest), as Bench.percentiles */
static double nearest_rank(const double* sorted, int n, int p) {
  int i = (int)ceil(p / 100.0 * n) - 1;
  return sorted[i < 0 ? 0 : i > n - 1 ? n - 1 : i];
}

#define CUDACHECK(cmd) do {                                                                         \
    cudaError_t e_ = (cmd);                                                                         \
    if (e_ != cudaSuccess) {                                                                        \
      fprintf(stderr, "[rank %d] %s:%d %s failed: %s (%s)\n", g_rank, __FILE__, __LINE__, #cmd,     \
              cudaGetErrorName(e_), cudaGetErrorString(e_));                                        \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                                 \
    }                                                                                               \
  } while (0)

#define NCCLCHECK(cmd) do {                                                                         \
    ncclResult_t r_ = (cmd);                                                                        \
    if (r_ != ncclSuccess && r_ != ncclInProgress) {                                                \
      fprintf(stderr, "[rank %d] %s:%d %s failed: %d %s (%s)\n", g_rank, __FILE__, __LINE__, #cmd,  \
              (int)r_, ncclGetErrorString(r_), ncclGetLastError(NULL));                             \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                                 \
    }                                                                                               \
  } while (0)

static void usage_error(const char* fmt, const char* a, const char* b) {
  if (g_rank == 0) {
    fprintf(stderr, "nccl_perf_baseline: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
  }
  MPI_Finalize();
  exit(2);
}

/* ------------------------------------------------------------------ operations, types, operators */

enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, SENDRECV, ALLTOALL, GATHER, SCATTER, NUM_OPS };
static const char* OP_NAMES[NUM_OPS] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                        "sendrecv", "alltoall", "gather", "scatter"};
static int op_reduces(int o) { return o == ALL_REDUCE || o == REDUCE_SCATTER || o == REDUCE; }
static int op_rooted(int o) { return o == BROADCAST || o == REDUCE || o == GATHER || o == SCATTER; }

/* ncclDataType_t codes 0..11 and their nccl-tests names and sizes */
#define NUM_TYPES 12
static const char* TYPE_NAMES[NUM_TYPES] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float",
                                            "double", "bfloat16", "f8e4m3", "f8e5m2"};
static const int TYPE_SIZES[NUM_TYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static int type_floating(int t) { return t >= 6; }

/* ncclRedOp_t codes 0..4 */
#define NUM_REDOPS 5
static const char* REDOP_NAMES[NUM_REDOPS] = {"sum", "prod", "max", "min", "avg"};

typedef struct { size_t send, recv, param, send_off, recv_off; } counts_t;

/* nccl-tests' size rules (see Operation.java): per-rank counts rounded down to 16 bytes */
static counts_t counts_of(int o, size_t bytes, int ws, int n) {
  size_t c = bytes / (size_t)ws;
  size_t align = ws >= 16 ? 1 : (size_t)(16 / ws);
  size_t b = (c / (size_t)n) / align * align;
  counts_t r;
  switch (o) {
    case ALL_GATHER: case GATHER: r.send = b; r.recv = b * n; r.param = b; r.send_off = b; r.recv_off = 0; break;
    case REDUCE_SCATTER: case SCATTER: r.send = b * n; r.recv = b; r.param = b; r.send_off = 0; r.recv_off = b; break;
    case ALLTOALL: r.send = b * n; r.recv = b * n; r.param = b; r.send_off = 0; r.recv_off = 0; break;
    default: r.send = c; r.recv = c; r.param = c; r.send_off = 0; r.recv_off = 0; break;
  }
  return r;
}

static double bus_factor(int o, int n) {
  switch (o) {
    case ALL_REDUCE: return 2.0 * (n - 1) / n;
    case ALL_GATHER: case REDUCE_SCATTER: case ALLTOALL: case GATHER: case SCATTER: return (double)(n - 1) / n;
    default: return 1.0;
  }
}

/* ------------------------------------------------------------------ arguments (nccl4j-perf's) */

typedef struct {
  long long min_bytes, max_bytes, step_bytes, step_factor;
  int iters, warmup, check, gpus, graph_launches, blocking, average, root; /* root -1: all */
  int init_repeats; /* communicators created and timed again after the first */
  int op_times;     /* 1: an event after every eager operation, and their p10/p50/p90/max */
  int ops[NUM_OPS], nops;
  int redops[NUM_REDOPS], nredops;
  int types[NUM_TYPES], ntypes;
  const char* json_file;
} args_t;

static const char* FLAGS[][2] = {{"-t", "--nthreads"}, {"--ops", "--operation"}, {"-b", "--minbytes"}, {"-e", "--maxbytes"},
  {"-i", "--stepbytes"}, {"-f", "--stepfactor"}, {"-n", "--iters"}, {"-w", "--warmup_iters"}, {"-c", "--check"},
  {"-o", "--op"}, {"-d", "--datatype"}, {"-r", "--root"}, {"-g", "--ngpus"}, {"-G", "--cudagraph"},
  {"-z", "--blocking"}, {"-a", "--average"}, {"-J", "--output_file"}, {"--init_repeats", "--init_repeats"}, {"--op_times", "--op_times"},
  {"-h", "--help"}};
#define NUM_FLAGS ((int)(sizeof(FLAGS) / sizeof(FLAGS[0])))

static const char* flag_of(const char* s) {
  for (int i = 0; i < NUM_FLAGS; i++) {
    if (strcmp(s, FLAGS[i][0]) == 0 || strcmp(s, FLAGS[i][1]) == 0) return FLAGS[i][0];
  }
  return NULL;
}

static long long parse_size(const char* flag, const char* v) {
  char* end;
  double x = strtod(v, &end);
  long long unit = 1;
  if (end == v || x < 0 || v[0] == '-' || v[0] == '+') usage_error("%s: '%s' is not a size (use e.g. 8, 64K, 128M, 8G)", flag, v);
  if (*end != '\0') {
    switch (*end) {
      case 'k': case 'K': unit = 1LL << 10; break;
      case 'm': case 'M': unit = 1LL << 20; break;
      case 'g': case 'G': unit = 1LL << 30; break;
      case 't': case 'T': unit = 1LL << 40; break;
      default: usage_error("%s: '%s' is not a size (use e.g. 8, 64K, 128M, 8G)", flag, v);
    }
    if (end[1] != '\0') usage_error("%s: '%s' is not a size (use e.g. 8, 64K, 128M, 8G)", flag, v);
  }
  return (long long)(x * (double)unit);
}

static long long parse_int(const char* flag, const char* v, long long min, long long max) {
  char* end;
  long long x = strtoll(v, &end, 0);
  if (end == v || *end != '\0') usage_error("%s: '%s' is not a whole number", flag, v);
  if (x < min || x > max) usage_error("%s: '%s' is out of range", flag, v);
  return x;
}

/* the operations of --ops (a list, or all), or of the program named first (all_reduce_perf, ./build/x_perf_mpi) */
static void parse_ops(args_t* a, const char* flag, const char* value) {
  if (strcasecmp(value, "all") == 0) {
    for (int o = 0; o < NUM_OPS; o++) a->ops[o] = o;
    a->nops = NUM_OPS;
    return;
  }
  char buf[512];
  const char* slash = strrchr(value, '/');
  snprintf(buf, sizeof(buf), "%s", slash ? slash + 1 : value);
  a->nops = 0;
  for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char* perf = strstr(tok, "_perf");
    if (perf != NULL && perf != tok) *perf = '\0';
    int found = -1;
    for (int o = 0; o < NUM_OPS; o++) if (strcasecmp(tok, OP_NAMES[o]) == 0) found = o;
    if (found < 0) usage_error("%s: '%s' is not an operation", flag, tok);
    int dup = 0;
    for (int k = 0; k < a->nops; k++) dup |= a->ops[k] == found;
    if (!dup) a->ops[a->nops++] = found;
  }
}

static void parse_args(int argc, char** argv, args_t* a) {
  memset(a, 0, sizeof(*a));
  a->min_bytes = a->max_bytes = 32LL << 20;
  a->step_bytes = 1LL << 20;
  a->step_factor = 1;
  a->iters = 20; a->warmup = 1; a->check = 1; a->gpus = 1; a->average = 1; a->root = 0;
  a->ops[0] = ALL_REDUCE; a->nops = 1;
  a->redops[0] = 0; a->nredops = 1;
  a->types[0] = 7; a->ntypes = 1;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') { /* the operation as nccl-tests' program, first */
    parse_ops(a, "the operation", argv[1]);
    first = 2;
  }
  for (int i = first; i < argc; i++) {
    char name[64];
    const char* value = NULL;
    const char* arg = argv[i];
    if (strncmp(arg, "--", 2) == 0) {
      const char* eq = strchr(arg, '=');
      size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
      if (len >= sizeof(name)) len = sizeof(name) - 1;
      memcpy(name, arg, len); name[len] = '\0';
      if (eq) value = eq + 1;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      name[0] = '-'; name[1] = arg[1]; name[2] = '\0';
      if (arg[2] != '\0') value = arg + 2;
    } else {
      usage_error("unexpected argument '%s'%s", arg, "");
    }
    const char* f = flag_of(name);
    if (f == NULL) usage_error("unknown option %s%s", name, "");
    if (strcmp(f, "-h") == 0) {
      if (g_rank == 0) printf("nccl_perf_baseline: the flags of nccl4j-perf (scripts/nccl4j-perf -h); one process per GPU under mpirun\n");
      MPI_Finalize();
      exit(0);
    }
    if (value == NULL) {
      if (i + 1 >= argc) usage_error("%s needs a value%s", f, "");
      value = argv[++i];
    }
    if (strcmp(f, "--init_repeats") == 0) { a->init_repeats = (int)parse_int(f, value, 0, 100000); continue; }
    if (strcmp(f, "--op_times") == 0) { a->op_times = (int)parse_int(f, value, 0, 1); continue; }
    if (strcmp(f, "--ops") == 0) {
      if (first == 2) usage_error("--ops: '%s' cannot be combined with the operation named first%s", value, "");
      parse_ops(a, f, value);
      continue;
    }
    switch (f[1]) {
      case 't':
        if (parse_int(f, value, 1, 1 << 30) != 1) usage_error("-t: '%s' threads per process: the C baseline runs one (one process per GPU)%s", value, "");
        break;
      case 'b': a->min_bytes = parse_size(f, value); break;
      case 'e': a->max_bytes = parse_size(f, value); break;
      case 'i': a->step_bytes = parse_size(f, value); break;
      case 'f': a->step_factor = parse_int(f, value, 0, 1LL << 31); break;
      case 'n': a->iters = (int)parse_int(f, value, 1, 1LL << 31); break;
      case 'w': a->warmup = (int)parse_int(f, value, 0, 1LL << 31); break;
      case 'c': a->check = (int)parse_int(f, value, 0, 1LL << 31); break;
      case 'o':
        if (strcasecmp(value, "all") == 0) {
          for (int k = 0; k < NUM_REDOPS; k++) a->redops[k] = k;
          a->nredops = NUM_REDOPS;
        } else {
          a->nredops = 0;
          for (int k = 0; k < NUM_REDOPS; k++) if (strcasecmp(value, REDOP_NAMES[k]) == 0) a->redops[a->nredops++] = k;
          if (a->nredops == 0) usage_error("-o: '%s' is not a reduction operator: use sum, prod, min, max, avg or all%s", value, "");
        }
        break;
      case 'd': {
        if (strcasecmp(value, "all") == 0) {
          for (int t = 0; t < NUM_TYPES; t++) a->types[t] = t;
          a->ntypes = NUM_TYPES;
          break;
        }
        static const struct { const char* name; int code; } alias[] = {{"char", 0}, {"int", 2}, {"float16", 6},
          {"fp16", 6}, {"float32", 7}, {"fp32", 7}, {"float64", 8}, {"fp64", 8}, {"bf16", 9}, {"fp8_e4m3", 10},
          {"e4m3", 10}, {"fp8_e5m2", 11}, {"e5m2", 11}};
        int code = -1;
        for (int t = 0; t < NUM_TYPES; t++) if (strcasecmp(value, TYPE_NAMES[t]) == 0) code = t;
        for (size_t k = 0; k < sizeof(alias) / sizeof(alias[0]); k++) if (strcasecmp(value, alias[k].name) == 0) code = alias[k].code;
        if (code < 0) usage_error("-d: '%s' is not a data type%s", value, "");
        a->types[0] = code; a->ntypes = 1;
        break;
      }
      case 'r': a->root = strcasecmp(value, "all") == 0 ? -1 : (int)parse_int(f, value, 0, 1 << 30); break;
      case 'g': a->gpus = (int)parse_int(f, value, 1, 1024); break;
      case 'G': a->graph_launches = (int)parse_int(f, value, 0, 1LL << 31); break;
      case 'z': a->blocking = (int)parse_int(f, value, 0, 2); break;
      case 'a': a->average = (int)parse_int(f, value, 0, 3); break;
      case 'J': a->json_file = value; break;
      default: usage_error("unknown option %s%s", f, "");
    }
  }
  if (a->min_bytes > a->max_bytes) usage_error("invalid sizes for -b and -e: %s > %s", "minbytes", "maxbytes");
  if (a->step_factor > 1 && a->min_bytes == 0) usage_error("-b: '%s' cannot grow by a factor%s", "0", "");
  if (a->step_factor <= 1 && a->step_bytes <= 0) usage_error("-i: must be > 0 when no factor (-f) is given%s%s", "", "");
  if (a->blocking && a->graph_launches) usage_error("-z cannot be combined with -G%s%s", "", "");
  if (a->op_times && a->graph_launches) usage_error("--op_times cannot be combined with -G%s%s", "", "");
  if (a->op_times && a->iters > 100000) usage_error("--op_times records one event per iteration: -n must be at most %s%s", "100000", "");
  if (a->gpus != 1) usage_error("-g: only 1 GPU per process is supported by the C baseline (run one process per GPU under mpirun)%s%s", "", "");
}

/* the size ladder of nccl-tests: multiply by -f when above 1, else add -i */
static int next_size(const args_t* a, long long* size) {
  if (a->step_factor > 1) {
    if (*size == 0 || *size > a->max_bytes / a->step_factor) return 0;
    *size *= a->step_factor;
  } else {
    if (*size > a->max_bytes - a->step_bytes) return 0;
    *size += a->step_bytes;
  }
  return 1;
}

/* ------------------------------------------------------------------ host encoding (as Elements.java) */

static int encode_minifloat(double v, int e, int m, int fn) {
  int sign = (v < 0 || (v == 0 && signbit(v))) ? 1 << (e + m) : 0;
  double a = fabs(v);
  int bias = (1 << (e - 1)) - 1;
  int max_exp = fn ? (1 << e) - 1 : (1 << e) - 2;
  int max_man = fn ? (1 << m) - 2 : (1 << m) - 1;
  double max = ldexp(1.0 + max_man / (double)(1 << m), max_exp - bias);
  if (isnan(v)) return fn ? sign | ((1 << (e + m)) - 1) : sign | (((1 << e) - 1) << m) | 1;
  if (a >= max) return sign | (max_exp << m) | max_man;
  if (a < ldexp(1.0, 1 - bias)) {
    double exact = ldexp(a, bias - 1 + m);
    long long q = (long long)floor(exact);
    double rest = exact - (double)q;
    if (rest > 0.5 || (rest == 0.5 && (q & 1))) q++;
    return sign | (int)q;
  }
  int fe;
  frexp(a, &fe);
  int exp = fe - 1;
  double scaled = (ldexp(a, -exp) - 1.0) * (1 << m);
  long long q = (long long)floor(scaled);
  double rest = scaled - (double)q;
  if (rest > 0.5 || (rest == 0.5 && (q & 1))) q++;
  int biased = exp + bias;
  if (q == (1 << m)) { q = 0; biased++; }
  if (biased > max_exp || (biased == max_exp && q > max_man)) return sign | (max_exp << m) | max_man;
  return sign | (biased << m) | (int)q;
}

static double decode_minifloat(int bits, int e, int m, int fn) {
  int sign = (bits >> (e + m)) & 1;
  int exp = (bits >> m) & ((1 << e) - 1);
  int man = bits & ((1 << m) - 1);
  int bias = (1 << (e - 1)) - 1;
  double v;
  if (fn && exp == (1 << e) - 1 && man == (1 << m) - 1) v = NAN;
  else if (!fn && exp == (1 << e) - 1) v = man == 0 ? INFINITY : NAN;
  else if (exp == 0) v = ldexp((double)man, 1 - bias - m);
  else v = ldexp(1.0 + man / (double)(1 << m), exp - bias);
  return sign ? -v : v;
}

static void put_elem(unsigned char* p, int t, double v) {
  switch (t) {
    case 0: { int8_t x = (int8_t)(long long)v; memcpy(p, &x, 1); break; }
    case 1: { uint8_t x = (uint8_t)(long long)v; memcpy(p, &x, 1); break; }
    case 2: { int32_t x = (int32_t)(long long)v; memcpy(p, &x, 4); break; }
    case 3: { uint32_t x = (uint32_t)(long long)v; memcpy(p, &x, 4); break; }
    case 4: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case 5: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    case 6: { uint16_t x = (uint16_t)encode_minifloat(v, 5, 10, 0); memcpy(p, &x, 2); break; }
    case 7: { float x = (float)v; memcpy(p, &x, 4); break; }
    case 8: memcpy(p, &v, 8); break;
    case 9: {
      float f = (float)v;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      uint16_t x = isnan(f) ? (uint16_t)((bits >> 16) | 0x40) : (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      memcpy(p, &x, 2);
      break;
    }
    case 10: p[0] = (unsigned char)encode_minifloat(v, 4, 3, 1); break;
    case 11: p[0] = (unsigned char)encode_minifloat(v, 5, 2, 0); break;
  }
}

static double get_elem(const unsigned char* p, int t) {
  switch (t) {
    case 0: { int8_t x; memcpy(&x, p, 1); return x; }
    case 1: return p[0];
    case 2: { int32_t x; memcpy(&x, p, 4); return x; }
    case 3: { uint32_t x; memcpy(&x, p, 4); return x; }
    case 4: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case 5: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case 6: { uint16_t x; memcpy(&x, p, 2); return decode_minifloat(x, 5, 10, 0); }
    case 7: { float x; memcpy(&x, p, 4); return x; }
    case 8: { double x; memcpy(&x, p, 8); return x; }
    case 9: { uint16_t x; memcpy(&x, p, 2); uint32_t b = (uint32_t)x << 16; float f; memcpy(&f, &b, 4); return f; }
    case 10: return decode_minifloat(p[0], 4, 3, 1);
    case 11: return decode_minifloat(p[0], 5, 2, 0);
  }
  return NAN;
}

/* ------------------------------------------------------------------ the check's pattern (as Pattern.java) */

static double pattern_input(int redop /* -1: data movement */, int q, long long i) {
  if (redop < 0) return (double)((3LL * q + i) % 8);
  long long shifted = i / (q + 1);
  switch (redop) {
    case 0: case 4: return (double)(shifted % 2);
    case 1: return q < 6 && shifted % 4 == 0 ? 2 : 1;
    default: return (double)((shifted + q) % 5);
  }
}

static double pattern_reduced(int redop, int t, int n, long long i) {
  double acc;
  switch (redop) {
    case 1: acc = 1; for (int q = 0; q < n; q++) acc *= pattern_input(redop, q, i); return acc;
    case 2: acc = -INFINITY; for (int q = 0; q < n; q++) acc = fmax(acc, pattern_input(redop, q, i)); return acc;
    case 3: acc = INFINITY; for (int q = 0; q < n; q++) acc = fmin(acc, pattern_input(redop, q, i)); return acc;
    default:
      acc = 0;
      for (int q = 0; q < n; q++) acc += pattern_input(redop, q, i);
      if (redop == 4) return type_floating(t) ? acc / n : floor(acc / n);
      return acc;
  }
}

static double pattern_expected(int o, int redop, int t, int n, int root, int rank, long long b, long long j) {
  switch (o) {
    case ALL_REDUCE: return pattern_reduced(redop, t, n, j);
    case REDUCE: return rank == root ? pattern_reduced(redop, t, n, j) : NAN;
    case BROADCAST: return pattern_input(-1, root, j);
    case ALL_GATHER: return pattern_input(-1, (int)(j / b), j % b);
    case GATHER: return rank == root ? pattern_input(-1, (int)(j / b), j % b) : NAN;
    case REDUCE_SCATTER: return pattern_reduced(redop, t, n, rank * b + j);
    case SCATTER: return pattern_input(-1, root, rank * b + j);
    case ALLTOALL: return pattern_input(-1, (int)(j / b), rank * b + j % b);
    case SENDRECV: return pattern_input(-1, (rank - 1 + n) % n, j);
  }
  return NAN;
}

static double pattern_tolerance(int t, int redop, double expected) {
  if (redop != 4 || !type_floating(t)) return 0;
  double rel = t == 8 ? 1e-12 : t == 7 ? 1e-6 : t == 6 ? 1.0 / 512 : t == 9 ? 1.0 / 64 : 0.25;
  return rel * fmax(1.0, fabs(expected));
}

/* ------------------------------------------------------------------ the benchmark */

typedef struct {
  const args_t* a;
  ncclComm_t comm;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  cudaEvent_t* marks; /* --op_times: one per iteration, else NULL */
  double* op_t;       /* --op_times: the per-iteration times of the last eager loop (us) */
  char *send, *recv;
  size_t buf_bytes;
  unsigned char* host;
  size_t host_bytes;
  int rank, nranks;
  char* sendp;
  char* recvp;
} bench_t;

typedef struct {
  int op; long long size, count; int type; int redop; int root; int in_place;
  double time_us, algbw, busbw; long long wrong;
  int has_op_times; double op_p10, op_p50, op_p90, op_max; /* --op_times, this rank's */
} result_t;

static void issue(bench_t* B, int o, counts_t c, int t, int redop, int root) {
  ncclDataType_t dt = (ncclDataType_t)t;
  ncclRedOp_t op = (ncclRedOp_t)(redop < 0 ? 0 : redop);
  size_t n = c.param;
  switch (o) {
    case ALL_REDUCE: NCCLCHECK(ncclAllReduce(B->sendp, B->recvp, n, dt, op, B->comm, B->stream)); break;
    case ALL_GATHER: NCCLCHECK(ncclAllGather(B->sendp, B->recvp, n, dt, B->comm, B->stream)); break;
    case REDUCE_SCATTER: NCCLCHECK(ncclReduceScatter(B->sendp, B->recvp, n, dt, op, B->comm, B->stream)); break;
    case BROADCAST: NCCLCHECK(ncclBroadcast(B->sendp, B->recvp, n, dt, root, B->comm, B->stream)); break;
    case REDUCE: NCCLCHECK(ncclReduce(B->sendp, B->recvp, n, dt, op, root, B->comm, B->stream)); break;
    case SENDRECV:
      NCCLCHECK(ncclGroupStart());
      NCCLCHECK(ncclSend(B->sendp, n, dt, (B->rank + 1) % B->nranks, B->comm, B->stream));
      NCCLCHECK(ncclRecv(B->recvp, n, dt, (B->rank - 1 + B->nranks) % B->nranks, B->comm, B->stream));
      NCCLCHECK(ncclGroupEnd());
      break;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    case ALLTOALL: NCCLCHECK(ncclAlltoAll(B->sendp, B->recvp, n, dt, B->comm, B->stream)); break;
    case GATHER: NCCLCHECK(ncclGather(B->sendp, B->recvp, n, dt, root, B->comm, B->stream)); break;
    case SCATTER: NCCLCHECK(ncclScatter(B->sendp, B->recvp, n, dt, root, B->comm, B->stream)); break;
#else
    case ALLTOALL: {
      size_t blk = n * TYPE_SIZES[t];
      NCCLCHECK(ncclGroupStart());
      for (int p = 0; p < B->nranks; p++) {
        NCCLCHECK(ncclSend(B->sendp + p * blk, n, dt, p, B->comm, B->stream));
        NCCLCHECK(ncclRecv(B->recvp + p * blk, n, dt, p, B->comm, B->stream));
      }
      NCCLCHECK(ncclGroupEnd());
      break;
    }
    case GATHER: {
      size_t blk = n * TYPE_SIZES[t];
      NCCLCHECK(ncclGroupStart());
      NCCLCHECK(ncclSend(B->sendp, n, dt, root, B->comm, B->stream));
      if (B->rank == root) for (int p = 0; p < B->nranks; p++) NCCLCHECK(ncclRecv(B->recvp + p * blk, n, dt, p, B->comm, B->stream));
      NCCLCHECK(ncclGroupEnd());
      break;
    }
    case SCATTER: {
      size_t blk = n * TYPE_SIZES[t];
      NCCLCHECK(ncclGroupStart());
      if (B->rank == root) for (int p = 0; p < B->nranks; p++) NCCLCHECK(ncclSend(B->sendp + p * blk, n, dt, p, B->comm, B->stream));
      NCCLCHECK(ncclRecv(B->recvp, n, dt, root, B->comm, B->stream));
      NCCLCHECK(ncclGroupEnd());
      break;
    }
#endif
  }
}

static counts_t place(bench_t* B, int o, int t, long long size, int in_place) {
  counts_t c = counts_of(o, (size_t)size, TYPE_SIZES[t], B->nranks);
  size_t ws = (size_t)TYPE_SIZES[t];
  if (in_place) {
    B->sendp = B->recv + c.send_off * (size_t)B->rank * ws;
    B->recvp = B->recv + c.recv_off * (size_t)B->rank * ws;
  } else {
    B->sendp = B->send;
    B->recvp = B->recv;
  }
  return c;
}

static double combine(double v, MPI_Op op) {
  double out;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
  return out;
}

static long long check(bench_t* B, int o, counts_t c, int t, int redop, int root) {
  size_t ws = (size_t)TYPE_SIZES[t];
  size_t per_chunk = B->host_bytes / ws;
  for (size_t s = 0; s < c.send; s += per_chunk) {
    size_t n = c.send - s < per_chunk ? c.send - s : per_chunk;
    for (size_t i = 0; i < n; i++) put_elem(B->host + i * ws, t, pattern_input(redop, B->rank, (long long)(s + i)));
    CUDACHECK(cudaMemcpy(B->sendp + s * ws, B->host, n * ws, cudaMemcpyHostToDevice));
  }
  CUDACHECK(cudaDeviceSynchronize());
  issue(B, o, c, t, redop, root);
  CUDACHECK(cudaStreamSynchronize(B->stream));
  long long wrong = 0;
  int checked = !((o == REDUCE || o == GATHER) && B->rank != root);
  if (checked) {
    for (size_t s = 0; s < c.recv; s += per_chunk) {
      size_t n = c.recv - s < per_chunk ? c.recv - s : per_chunk;
      CUDACHECK(cudaMemcpy(B->host, B->recvp + s * ws, n * ws, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; i++) {
        double want = pattern_expected(o, redop, t, B->nranks, root, B->rank, (long long)c.param, (long long)(s + i));
        double got = get_elem(B->host + i * ws, t);
        if (!(fabs(got - want) <= pattern_tolerance(t, redop, want))) wrong++;
      }
    }
  }
  return (long long)llround(combine((double)wrong, MPI_SUM));
}

static result_t measure(bench_t* B, int o, int t, int redop_in, int root, long long size, int in_place) {
  const args_t* a = B->a;
  int redop = op_reduces(o) ? redop_in : -1;
  counts_t c = place(B, o, t, size, in_place);
  issue(B, o, c, t, redop, root);
  CUDACHECK(cudaStreamSynchronize(B->stream));
  MPI_Barrier(MPI_COMM_WORLD);

  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  if (a->graph_launches > 0) {
    CUDACHECK(cudaStreamBeginCapture(B->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < a->iters; i++) issue(B, o, c, t, redop, root);
    CUDACHECK(cudaStreamEndCapture(B->stream, &graph));
    CUDACHECK(cudaGraphInstantiate(&exec, graph, 0));
    MPI_Barrier(MPI_COMM_WORLD);
    CUDACHECK(cudaEventRecord(B->start, B->stream));
    for (int l = 0; l < a->graph_launches; l++) CUDACHECK(cudaGraphLaunch(exec, B->stream));
  } else {
    CUDACHECK(cudaEventRecord(B->start, B->stream));
    for (int i = 0; i < a->iters; i++) {
      issue(B, o, c, t, redop, root);
      if (B->marks) CUDACHECK(cudaEventRecord(B->marks[i], B->stream));
      if (a->blocking) {
        CUDACHECK(cudaStreamSynchronize(B->stream));
        if (a->blocking == 1) MPI_Barrier(MPI_COMM_WORLD);
      }
    }
  }
  CUDACHECK(cudaEventRecord(B->stop, B->stream));
  CUDACHECK(cudaEventSynchronize(B->stop));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, B->start, B->stop));
  if (exec) CUDACHECK(cudaGraphExecDestroy(exec));
  if (graph) CUDACHECK(cudaGraphDestroy(graph));

  double us = ms * 1000.0 / ((double)a->iters * (a->graph_launches > 0 ? a->graph_launches : 1));
  int nprocs = B->nranks;
  switch (a->average) {
    case 0: us = combine(B->rank == 0 ? us : 0, MPI_SUM); break;
    case 2: us = combine(us, MPI_MIN); break;
    case 3: us = combine(us, MPI_MAX); break;
    default: us = combine(us, MPI_SUM) / nprocs; break;
  }
  result_t r;
  r.has_op_times = 0;
  if (B->marks && !exec) {
    for (int i = 0; i < a->iters; i++) {
      float m = 0;
      CUDACHECK(cudaEventElapsedTime(&m, i == 0 ? B->start : B->marks[i - 1], B->marks[i]));
      B->op_t[i] = m * 1000.0;
    }
    qsort(B->op_t, (size_t)a->iters, sizeof(double), cmp_double);
    int n = a->iters;
    r.has_op_times = 1;
    r.op_p10 = nearest_rank(B->op_t, n, 10);
    r.op_p50 = nearest_rank(B->op_t, n, 50);
    r.op_p90 = nearest_rank(B->op_t, n, 90);
    r.op_max = B->op_t[n - 1];
  }
  r.op = o; r.type = t; r.redop = redop; r.root = op_rooted(o) ? root : -1; r.in_place = in_place;
  r.size = (long long)((c.send > c.recv ? c.send : c.recv) * (size_t)TYPE_SIZES[t]);
  r.count = (long long)c.param;
  r.time_us = us;
  r.algbw = us > 0 ? (double)r.size / (us * 1e-6) / 1e9 : 0;
  r.busbw = r.algbw * bus_factor(o, B->nranks);
  r.wrong = -1;
  /* NCCL defines no in-place send/recv or all-to-all (the same buffer is read and written by concurrent
   * transfers): those are timed but not checked, and print N/A. */
  if (a->check > 0 && !(in_place && (o == SENDRECV || o == ALLTOALL))) {
    r.wrong = 0;
    for (int k = 0; k < a->check; k++) r.wrong += check(B, o, c, t, redop, root);
  }
  return r;
}

/* ------------------------------------------------------------------ output (nccl-tests' columns) */

static void number(char* out, size_t cap, double v, int width) {
  const char* fmts[] = {"%*.2f", "%*.1f", "%*.0f"};
  for (int k = 0; k < 3; k++) {
    if (snprintf(out, cap, fmts[k], width, v) <= width) return;
  }
  snprintf(out, cap, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

static void print_body(const result_t* r) {
  char t[32], a[32], b[32];
  number(t, sizeof(t), r->time_us, 7);
  number(a, sizeof(a), r->algbw, 6);
  number(b, sizeof(b), r->busbw, 6);
  if (r->wrong < 0) printf("  %7s  %6s  %6s    N/A", t, a, b);
  else printf("  %7s  %6s  %6s  %6g", t, a, b, (double)r->wrong);
}

static void print_header(const args_t* a, int op, int nranks, double init_ms, const char* host, int device, int version) {
  printf("# nccl_perf_baseline nccl-headers=%d nccl-library=%d\n", NCCL_VERSION_CODE, version);
  printf("# Collective test starting: %s\n", OP_NAMES[op]);
  printf("# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d agg iters: 1 "
         "validation: %d graph: %d\n", a->min_bytes, a->max_bytes, a->step_factor > 1 ? a->step_factor : a->step_bytes,
         a->step_factor > 1 ? "factor" : "bytes", a->warmup, a->iters, a->check, a->graph_launches);
  if (a->blocking == 1) printf("# Blocking Enabled: wait and barrier after each iteration\n");
  if (a->blocking == 2) printf("# Blocking Enabled: wait after each iteration, no barrier\n");
  printf("#\n# Using devices\n");
  printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d\n", 0, 0, (int)getpid(), host, device);
  if (nranks > 1) printf("#  Ranks 1..%d: one process each (mpirun)\n", nranks - 1);
  printf("# Communicator init: %.1f ms (ncclGetUniqueId + MPI_Bcast + ncclCommInitRank)\n", init_ms);
  if (g_init_repeats > 0)
    printf("# Communicator re-created %d times in this process: median %.1f ms (min %.1f, max %.1f)\n", g_init_repeats,
           g_init_median, g_init_min, g_init_max);
  printf("#\n");
  printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
         "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
         "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

static void json_number(FILE* f, double v) {
  if (isnan(v) || isinf(v)) fprintf(f, "null");
  else if (v == rint(v) && fabs(v) < 1e15) fprintf(f, "%lld", (long long)v);
  else fprintf(f, "%.6g", v);
}

/* ------------------------------------------------------------------ main */

/* The timed creation of a communicator: ncclGetUniqueId on rank 0, MPI_Bcast of the id, ncclCommInitRank.
 * Returns its milliseconds. */
static double create_comm(ncclComm_t* comm, int nranks) {
  struct timespec t0, t1;
  ncclUniqueId id;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (g_rank == 0) NCCLCHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  NCCLCHECK(ncclCommInitRank(comm, nranks, id, g_rank));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  args_t a;
  parse_args(argc, argv, &a);

  MPI_Comm node;
  int local_rank;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  int ndev = 0;
  CUDACHECK(cudaGetDeviceCount(&ndev));
  if (ndev == 0) usage_error("no CUDA device%s%s", "", "");
  int device = local_rank % ndev;
  CUDACHECK(cudaSetDevice(device));
  CUDACHECK(cudaFree(0)); /* the CUDA context exists before the measured init */

  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  char vtext[32];
  snprintf(vtext, sizeof(vtext), "%d.%d.%d", version / 10000, (version / 100) % 100, version % 100);
  const char* libpath = "";
  Dl_info info;
  if (dladdr((void*)ncclGetVersion, &info) && info.dli_fname) libpath = info.dli_fname;
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);

  bench_t B;
  memset(&B, 0, sizeof(B));
  MPI_Barrier(MPI_COMM_WORLD);
  double init_ms = create_comm(&B.comm, nranks);

  /* --init_repeats: the same creation again, after a barrier each time, and destroyed right after (as nccl4j-perf) */
  double* again = (double*)calloc(a.init_repeats > 0 ? (size_t)a.init_repeats : 1, sizeof(double));
  for (int r = 0; r < a.init_repeats; r++) {
    ncclComm_t c;
    MPI_Barrier(MPI_COMM_WORLD);
    again[r] = create_comm(&c, nranks);
    NCCLCHECK(ncclCommFinalize(c));
    NCCLCHECK(ncclCommDestroy(c));
  }
  g_init_repeats = a.init_repeats;
  if (a.init_repeats > 0) {
    double* sorted = (double*)malloc((size_t)a.init_repeats * sizeof(double));
    memcpy(sorted, again, (size_t)a.init_repeats * sizeof(double));
    qsort(sorted, (size_t)a.init_repeats, sizeof(double), cmp_double);
    int n = a.init_repeats;
    g_init_median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    g_init_min = sorted[0];
    g_init_max = sorted[n - 1];
    free(sorted);
  }

  B.a = &a;
  B.rank = g_rank;
  B.nranks = nranks;
  B.buf_bytes = (size_t)(a.max_bytes > 256 ? a.max_bytes : 256);
  CUDACHECK(cudaStreamCreateWithFlags(&B.stream, cudaStreamNonBlocking));
  CUDACHECK(cudaMalloc((void**)&B.send, B.buf_bytes));
  CUDACHECK(cudaMalloc((void**)&B.recv, B.buf_bytes));
  CUDACHECK(cudaMemset(B.send, 0, B.buf_bytes));
  CUDACHECK(cudaMemset(B.recv, 0, B.buf_bytes));
  CUDACHECK(cudaEventCreate(&B.start));
  CUDACHECK(cudaEventCreate(&B.stop));
  if (a.op_times) {
    B.marks = (cudaEvent_t*)calloc((size_t)a.iters, sizeof(cudaEvent_t));
    B.op_t = (double*)calloc((size_t)a.iters, sizeof(double));
    if (!B.marks || !B.op_t) usage_error("--op_times: cannot allocate %s%s", "the per-iteration events", "");
    for (int i = 0; i < a.iters; i++) CUDACHECK(cudaEventCreate(&B.marks[i]));
  }
  CUDACHECK(cudaDeviceSynchronize());
  B.host_bytes = B.buf_bytes < (16u << 20) ? B.buf_bytes : (16u << 20);
  B.host = (unsigned char*)malloc(B.host_bytes);

  int roots[4096], nroots = 0;
  if (a.root < 0) { for (int r = 0; r < nranks && r < 4096; r++) roots[nroots++] = r; }
  else if (a.root >= nranks) usage_error("-r: root is not a rank of this run%s%s", "", "");
  else roots[nroots++] = a.root;

  size_t cap = 1024, nres = 0;
  result_t* results = (result_t*)malloc(cap * sizeof(result_t));
  double avg_bw[NUM_OPS];
  long long wrong_total = 0;
  for (int oi = 0; oi < a.nops; oi++) {
    int o = a.ops[oi];
    if (g_rank == 0) print_header(&a, o, nranks, init_ms, host, device, version);
    double bw_sum = 0;
    int bw_count = 0;
    long long wrong_op = 0;
    int nred = op_reduces(o) ? a.nredops : 1;
    int nrt = op_rooted(o) ? nroots : 1;
    for (int ti = 0; ti < a.ntypes; ti++) {
      int t = a.types[ti];
      if ((t == 10 || t == 11) && version < 22400) continue;
      for (int ri = 0; ri < nred; ri++) {
        int redop = op_reduces(o) ? a.redops[ri] : -1;
        for (int rr = 0; rr < nrt; rr++) {
          int root = op_rooted(o) ? roots[rr] : 0;
          MPI_Barrier(MPI_COMM_WORLD);
          if (a.warmup > 0) { /* nccl-tests' warm-up: -w iterations at each size, doubling */
            long long s = a.min_bytes > 0 ? a.min_bytes : 1;
            while (s <= a.max_bytes) {
              counts_t c = place(&B, o, t, s, 0);
              for (int w = 0; w < a.warmup; w++) issue(&B, o, c, t, redop, root);
              if (s > a.max_bytes / 2) break;
              s *= 2;
            }
            CUDACHECK(cudaStreamSynchronize(B.stream));
          }
          long long size = a.min_bytes;
          do {
            result_t r[2];
            for (int ip = 0; ip < 2; ip++) {
              r[ip] = measure(&B, o, t, redop, root, size, ip);
              bw_sum += r[ip].busbw;
              bw_count++;
              if (r[ip].wrong > 0) wrong_op += r[ip].wrong;
              if (nres == cap) { cap *= 2; results = (result_t*)realloc(results, cap * sizeof(result_t)); }
              results[nres++] = r[ip];
            }
            if (g_rank == 0) {
              printf("%12lld  %12lld  %8s  %6s  %6d", r[0].size, r[0].count, TYPE_NAMES[t],
                     redop < 0 ? "none" : REDOP_NAMES[redop], r[0].root);
              print_body(&r[0]);
              print_body(&r[1]);
              printf("\n");
              if (r[0].has_op_times && r[1].has_op_times)
                printf("#  per operation (us, rank %d): out-of-place p10 %.2f p50 %.2f p90 %.2f max %.2f; in-place p10 %.2f p50 %.2f p90 %.2f max %.2f\n",
                       g_rank, r[0].op_p10, r[0].op_p50, r[0].op_p90, r[0].op_max, r[1].op_p10, r[1].op_p50, r[1].op_p90, r[1].op_max);
              fflush(stdout);
            }
          } while (next_size(&a, &size));
        }
      }
    }
    avg_bw[o] = bw_count ? bw_sum / bw_count : 0;
    wrong_total += wrong_op;
    if (g_rank == 0) {
      printf("# %-20s : %lld %s\n", "Out of bounds values", wrong_op, wrong_op ? "FAILED" : "OK");
      printf("# %-20s : %g \n", "Avg bus bandwidth", avg_bw[o]);
      printf("#\n# Collective test concluded: %s\n", OP_NAMES[o]);
    }
  }

  if (g_rank == 0 && a.json_file) {
    FILE* f = fopen(a.json_file, "w");
    if (!f) {
      fprintf(stderr, "nccl_perf_baseline: -J: cannot write %s\n", a.json_file);
    } else {
      char date[64];
      time_t now = time(NULL);
      strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
      fprintf(f, "{\n  \"tool\": \"nccl_perf_baseline\",\n  \"tool_version\": \"1\",\n  \"date\": \"%s\",\n", date);
      fprintf(f, "  \"hostname\": "); json_string(f, host);
      fprintf(f, ",\n  \"nccl_version\": \"%s\",\n  \"nccl_version_code\": %d,\n  \"nccl_library\": ", vtext, version);
      json_string(f, libpath);
      fprintf(f, ",\n  \"ranks\": %d,\n  \"processes\": %d,\n  \"gpus_per_process\": 1,\n", nranks, nranks);
      fprintf(f, "  \"mode\": \"process-per-gpu\",\n  \"init_ms\": ");
      json_number(f, init_ms);
      if (a.init_repeats > 0) {
        fprintf(f, ",\n  \"init_repeat_ms\": [");
        for (int r = 0; r < a.init_repeats; r++) { if (r) fprintf(f, ", "); json_number(f, again[r]); }
        fprintf(f, "],\n  \"init_repeat_median_ms\": ");
        json_number(f, g_init_median);
      }
      fprintf(f, ",\n  \"runtime\": \"C (nvcc, CUDA %d)\",\n", CUDART_VERSION);
      fprintf(f, "  \"config\": {\n    \"minbytes\": %lld,\n    \"maxbytes\": %lld,\n    \"stepfactor\": %lld,\n"
                 "    \"stepbytes\": %lld,\n    \"iters\": %d,\n    \"warmup_iters\": %d,\n    \"check\": %d,\n"
                 "    \"cudagraph\": %d,\n    \"blocking\": %d,\n    \"average\": %d\n  },\n",
              a.min_bytes, a.max_bytes, a.step_factor, a.step_bytes, a.iters, a.warmup, a.check, a.graph_launches,
              a.blocking, a.average);
      fprintf(f, "  \"command_line\": [");
      for (int i = 1; i < argc; i++) { if (i > 1) fprintf(f, ", "); json_string(f, argv[i]); }
      fprintf(f, "],\n  \"results\": [");
      for (size_t k = 0; k < nres; k++) {
        const result_t* r = &results[k];
        fprintf(f, "%s\n    {\n      \"op\": \"%s\",\n      \"size\": %lld,\n      \"count\": %lld,\n"
                   "      \"type\": \"%s\",\n      \"redop\": \"%s\",\n      \"root\": %d,\n      \"placement\": \"%s\",\n"
                   "      \"graph\": %s,\n      \"time_us\": ",
                k ? "," : "", OP_NAMES[r->op], r->size, r->count, TYPE_NAMES[r->type],
                r->redop < 0 ? "none" : REDOP_NAMES[r->redop], r->root, r->in_place ? "in-place" : "out-of-place",
                a.graph_launches > 0 ? "true" : "false");
        json_number(f, r->time_us);
        fprintf(f, ",\n      \"algbw\": ");
        json_number(f, r->algbw);
        fprintf(f, ",\n      \"busbw\": ");
        json_number(f, r->busbw);
        if (r->has_op_times) {
          fprintf(f, ",\n      \"op_time_us\": {\"p10\": ");
          json_number(f, r->op_p10);
          fprintf(f, ", \"p50\": ");
          json_number(f, r->op_p50);
          fprintf(f, ", \"p90\": ");
          json_number(f, r->op_p90);
          fprintf(f, ", \"max\": ");
          json_number(f, r->op_max);
          fprintf(f, "}");
        }
        if (r->wrong < 0) fprintf(f, ",\n      \"wrong\": null\n    }");
        else fprintf(f, ",\n      \"wrong\": %lld\n    }", r->wrong);
      }
      fprintf(f, "\n  ],\n  \"avg_busbw\": {");
      for (int oi = 0; oi < a.nops; oi++) {
        fprintf(f, "%s\n    \"%s\": ", oi ? "," : "", OP_NAMES[a.ops[oi]]);
        json_number(f, avg_bw[a.ops[oi]]);
      }
      fprintf(f, "\n  }\n}\n");
      fclose(f);
      printf("# Wrote JSON output to %s\n", a.json_file);
    }
  }

  free(results);
  free(again);
  if (B.marks) {
    for (int i = 0; i < a.iters; i++) CUDACHECK(cudaEventDestroy(B.marks[i]));
    free(B.marks);
    free(B.op_t);
  }
  free(B.host);
  CUDACHECK(cudaEventDestroy(B.start));
  CUDACHECK(cudaEventDestroy(B.stop));
  CUDACHECK(cudaFree(B.send));
  CUDACHECK(cudaFree(B.recv));
  CUDACHECK(cudaStreamDestroy(B.stream));
  NCCLCHECK(ncclCommFinalize(B.comm));
  NCCLCHECK(ncclCommDestroy(B.comm));
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}

/* The native baseline of scripts/bench/jmh-alloc.sh: the cost of one ncclAllReduce call from C into the same stub NCCL
 * that the JMH benchmark calls through nccl4j, so that JMH's ns/op minus this is what the Java binding adds per
 * call (the JNI transition and nccl4j's argument checks). CPU only: the stub does no GPU work.
 *
 *   gcc -O2 -o stub_call_cost scripts/bench/native/stub_call_cost.c -ldl
 *   ./stub_call_cost nccl4j-native/target/nccl-stub/libnccl-stub.so [calls per round, default 20000000]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*all_reduce_t)(const void*, void*, size_t, int, int, void*, void*);

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <libnccl stub> [calls per round]\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "stub_call_cost: %s\n", dlerror());
    return 2;
  }
  all_reduce_t all_reduce = (all_reduce_t)dlsym(lib, "ncclAllReduce");
  if (all_reduce == NULL) {
    fprintf(stderr, "stub_call_cost: %s has no ncclAllReduce\n", argv[1]);
    return 2;
  }
  long calls = argc > 2 ? atol(argv[2]) : 20000000L;
  if (calls <= 0) {
    fprintf(stderr, "stub_call_cost: calls per round must be > 0\n");
    return 2;
  }
  for (int round = 0; round < 5; round++) {
    struct timespec t0, t1;
    int failed = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < calls; i++) {
      /* the arguments of the JMH benchmark's raw all-reduce: float (7), sum (0), 1024 elements */
      failed |= all_reduce((const void*)0x10000, (void*)0x20000, 1024, 7, 0, (void*)0x30000, (void*)0x40000);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)calls;
    printf("C -> stub ncclAllReduce, round %d: %.1f ns/call%s\n", round + 1, ns, failed ? " (the stub returned errors)" : "");
  }
  return 0;
}

// Experiment (session 3, device call 2): the C baseline's main as a JNI method of InJvm (no jni.h needed: the
// arguments come from INJVM_ARGS, and jint is int).
#include <stdlib.h>
#include <string.h>
#define main baseline_main
#include "../../../../perf/native/nccl_perf_baseline.cu"
#undef main

extern "C" __attribute__((visibility("default"))) int Java_InJvm_run(void* env, void* cls) {
  (void)env; (void)cls;
  const char* s = getenv("INJVM_ARGS");
  char* copy = strdup(s ? s : "");
  static char* argv[256];
  int argc = 0;
  argv[argc++] = (char*)"nccl_perf_baseline_in_jvm";
  for (char* t = strtok(copy, " "); t && argc < 255; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc] = NULL;
  return baseline_main(argc, argv);
}

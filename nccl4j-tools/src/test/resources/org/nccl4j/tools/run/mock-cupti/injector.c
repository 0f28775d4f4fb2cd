/*
 * For KernelTraceTest only: what the CUDA driver does with CUDA_INJECTION64_PATH, without CUDA: loads the library
 * named by argv[1], calls its InitializeInjection(), prints what it returned and exits (the tracer writes its trace
 * at exit).
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 3;
  }
  int (*init)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
  if (!init) {
    fprintf(stderr, "no InitializeInjection\n");
    return 4;
  }
  printf("InitializeInjection: %d\n", init());
  return 0;
}

/* Experiment (session 4, device call 11): before main, takes TOUCH_GB gigabytes of anonymous memory and writes one
 * byte per page, and keeps it, as a JVM does with its heap; so that the C baseline's later allocations (CUDA's
 * pinned host memory, NCCL's) land where they would in a process that already holds that much memory. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

__attribute__((constructor)) static void touch_start(void) {
  const char* s = getenv("TOUCH_GB");
  size_t gb = s ? (size_t)strtoul(s, NULL, 10) : 0;
  if (gb == 0) return;
  size_t bytes = gb << 30;
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("touch: mmap"); return; }
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  fprintf(stderr, "touch: %zu GiB taken and written\n", gb);
}

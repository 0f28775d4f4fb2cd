/* Experiment (session 4, device call 9): MPI_Init when loaded (LD_PRELOAD), MPI_Finalize at exit, so that a
 * process that is not an MPI program (nccl4j-perf's JVM) is initialized as the C baseline is. */
#include <mpi.h>
#include <stdio.h>

__attribute__((constructor)) static void mpiinit_start(void) {
  int ok = MPI_Init(NULL, NULL);
  fprintf(stderr, "mpiinit: MPI_Init returned %d\n", ok);
}

__attribute__((destructor)) static void mpiinit_end(void) {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

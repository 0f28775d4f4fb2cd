/* A shared library that is not NCCL: used to test the loader's "not an NCCL library" error. */
int not_nccl_marker(void) { return 42; }

/** Device memory a process's CUDA context takes beside what its engine allocates, MiB (about 0.75 GiB). */
export const CUDA_CONTEXT_MIB = 768;

/**
 * What an MPS memory limit adds to a server's share, MiB: its CUDA context and 256 MiB to spare, since a
 * client over its limit fails its allocation (and under MPS a client's fault can take its neighbours).
 */
export const MPS_CAP_CONTEXT_MIB = CUDA_CONTEXT_MIB + 256;

/* A stand-in for "another process holds the GPU" (tests of the busy-GPU error):
 *   pp_gpu_hog DEVICE LEAVE_MIB
 * allocates all of DEVICE's free memory but LEAVE_MIB (plain cudaMalloc, never touched), prints
 * "held H MiB, F MiB free" on stdout and holds it until stdin closes (or a signal ends it).
 * Exit 0; 1 on a CUDA error; 2 on bad arguments. Changes no GPU setting. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pp_gpu_hog DEVICE LEAVE_MIB\n");
        return 2;
    }
    int dev = atoi(argv[1]);
    double leave = atof(argv[2]) * 1048576.0;
    size_t fr = 0, tot = 0;
    void *p = NULL;
    if (cudaSetDevice(dev) != cudaSuccess || cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
        fprintf(stderr, "pp_gpu_hog: GPU %d: %s\n", dev, cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    /* all but `leave`; the allocator may refuse the exact figure: step down 16 MiB at a time */
    double want = (double)fr - leave;
    for (int i = 0; i < 64 && want > 0; i++, want -= 16.0 * 1048576.0) {
        if (cudaMalloc(&p, (size_t)want) == cudaSuccess) break;
        p = NULL;
        cudaGetLastError();
    }
    if (!p) {
        fprintf(stderr, "pp_gpu_hog: could not hold %.0f MiB of GPU %d\n", ((double)fr - leave) / 1048576.0, dev);
        return 1;
    }
    cudaMemGetInfo(&fr, &tot);
    printf("held %.0f MiB, %.0f MiB free\n", want / 1048576.0, (double)fr / 1048576.0);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {
    }
    cudaFree(p);
    return 0;
}

/* mpi_glue.c: the few MPI calls the nccl probe needs, in C (Open MPI's headers stay out of the CUDA
 * sources). Without MPI (or when not started by mpirun) the probe is one process and these are
 * identities. */
#include "probe.h"
#include "probe_config.h"

#include <stdlib.h>

#if PP_HAVE_MPI
#include <mpi.h>

static bool active;

/* mpirun (Open MPI), or a PMI/PMIx launcher such as srun, sets these. */
static bool launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int pp_mpi_init(int *argc, char ***argv)
{
    if (!launched_by_mpi()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return -1;
    active = true;
    return 0;
}

bool pp_mpi_active(void) { return active; }

int pp_mpi_rank(void)
{
    int r = 0;
    if (active) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int pp_mpi_size(void)
{
    int n = 1;
    if (active) MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

int pp_mpi_local_rank(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!v) v = getenv("MPI_LOCALRANKID");
    if (!v) v = getenv("SLURM_LOCALID");
    if (v) return atoi(v);
    if (!active) return 0;
    /* ranks sharing a node: split by shared memory */
    MPI_Comm node;
    int r = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &r);
    MPI_Comm_free(&node);
    return r;
}

int pp_mpi_bcast(void *buf, size_t bytes)
{
    if (!active) return 0;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

double pp_mpi_max(double v)
{
    double out = v;
    if (active) MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

double pp_mpi_sum(double v)
{
    double out = v;
    if (active) MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
}

void pp_mpi_finalize(void)
{
    if (active) MPI_Finalize();
    active = false;
}

#else

int pp_mpi_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}
bool pp_mpi_active(void) { return false; }
int pp_mpi_rank(void) { return 0; }
int pp_mpi_size(void) { return 1; }
int pp_mpi_local_rank(void) { return 0; }
int pp_mpi_bcast(void *buf, size_t bytes)
{
    (void)buf;
    (void)bytes;
    return 0;
}
double pp_mpi_max(double v) { return v; }
double pp_mpi_sum(double v) { return v; }
void pp_mpi_finalize(void) {}

#endif

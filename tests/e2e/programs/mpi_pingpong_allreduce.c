/* A ping-pong and an allreduce of 1 MiB with every byte checked: what an MPI user runs first on
 * a new cluster. Plain MPI, built with Debian's mpicc, so it runs the same on hardware.
 *
 *   mpirun -H h1,h2,h3,h4 mpi-pingpong-allreduce [BYTES] [ITERATIONS]
 *
 * Rank 0 ping-pongs with the last rank (on leaf-spine, across the spines): each message carries
 * a pattern made of the iteration and the sender, the receiver checks it and answers with its
 * own. Then every rank contributes BYTES of 32-bit integers that depend on its rank and the
 * element's index to an MPI_SUM allreduce, and checks every element of the result. Prints one
 * line per step; exits 1 at the first wrong byte, naming it. */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pattern(int iteration, int sender, size_t i) {
    return (uint8_t)(i * 131u + (size_t)iteration * 7u + (size_t)sender * 29u + 1u);
}

static void fill(uint8_t* buffer, size_t bytes, int iteration, int sender) {
    for (size_t i = 0; i < bytes; ++i) buffer[i] = pattern(iteration, sender, i);
}

static int check(const uint8_t* buffer, size_t bytes, int iteration, int sender, int me) {
    for (size_t i = 0; i < bytes; ++i) {
        if (buffer[i] != pattern(iteration, sender, i)) {
            fprintf(stderr, "rank %d: ping-pong iteration %d, byte %zu from rank %d is 0x%02x, expected 0x%02x\n",
                    me, iteration, i, sender, buffer[i], pattern(iteration, sender, i));
            return 0;
        }
    }
    return 1;
}

static int32_t contribution(int rank, size_t i) { return (int32_t)((i % 1000003u) * (size_t)(rank + 1) + (size_t)rank); }

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0, name_length = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &name_length);
    const size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 1u << 20;
    const int iterations = argc > 2 ? atoi(argv[2]) : 20;
    if (size < 2 || bytes < 4 || iterations < 1) {
        if (rank == 0) fprintf(stderr, "needs at least 2 ranks, 4 bytes and 1 iteration\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char* rdma_host = getenv("ROCEFAB_HOST");
    printf("rank %d of %d on %s (emulated host %s)\n", rank, size, name, rdma_host ? rdma_host : "?");
    fflush(stdout);

    uint8_t* message = malloc(bytes);
    int ok = message != NULL;
    const int peer = size - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double started = MPI_Wtime();
    for (int it = 0; ok && it < iterations && (rank == 0 || rank == peer); ++it) {
        if (rank == 0) {
            fill(message, bytes, it, 0);
            MPI_Send(message, (int)bytes, MPI_BYTE, peer, it, MPI_COMM_WORLD);
            memset(message, 0, bytes);
            MPI_Recv(message, (int)bytes, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ok = check(message, bytes, it, peer, rank);
        } else {
            memset(message, 0, bytes);
            MPI_Recv(message, (int)bytes, MPI_BYTE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ok = check(message, bytes, it, 0, rank);
            fill(message, bytes, it, peer);
            MPI_Send(message, (int)bytes, MPI_BYTE, 0, it, MPI_COMM_WORLD);
        }
    }
    const double pingpong_seconds = MPI_Wtime() - started;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0) printf("ping-pong FAILED\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        printf("ping-pong ok: rank 0 <-> rank %d, %d round trips of %zu bytes checked, %.1f us a round trip, %.1f MB/s\n",
               peer, iterations, bytes, pingpong_seconds / iterations * 1e6,
               2.0 * (double)bytes * iterations / pingpong_seconds / 1e6);
    fflush(stdout);

    const size_t count = bytes / sizeof(int32_t);
    int32_t* mine = malloc(count * sizeof(int32_t));
    int32_t* sum = malloc(count * sizeof(int32_t));
    ok = mine && sum;
    if (ok) {
        for (size_t i = 0; i < count; ++i) mine[i] = contribution(rank, i), sum[i] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        started = MPI_Wtime();
        MPI_Allreduce(mine, sum, (int)count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        const double allreduce_seconds = MPI_Wtime() - started;
        for (size_t i = 0; ok && i < count; ++i) {
            int64_t expected = 0;
            for (int r = 0; r < size; ++r) expected += contribution(r, i);
            if (sum[i] != (int32_t)expected) {
                fprintf(stderr, "rank %d: allreduce element %zu is %d, expected %d\n", rank, i, sum[i],
                        (int32_t)expected);
                ok = 0;
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (rank == 0 && ok)
            printf("allreduce ok: %d ranks, %zu bytes of MPI_INT32_T summed and every element checked on every rank, %.1f ms\n",
                   size, count * sizeof(int32_t), allreduce_seconds * 1e3);
        if (rank == 0 && !ok) printf("allreduce FAILED\n");
    }
    free(message);
    free(mine);
    free(sum);
    MPI_Finalize();
    return ok ? 0 : 1;
}

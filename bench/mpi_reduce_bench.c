/* mpi_reduce_bench.c — MPI_Reduce (float32 sum to root 0) timed the way
 * shared/anchors/mpi_coll_bench.c times its operations (which has no reduce), in the same CSV
 * schema, so that weft's reduce can be put beside Open MPI's and MPICH's.
 *
 * Method (as the anchors): per size, the result is checked once on an integer pattern (exact in
 * float32); then one probe op and warm-up ops give t_est; iters = target / t_est clamped to
 * [3, 1e6], run in up to 5 batches, each after a barrier; each batch's time is the maximum over
 * ranks. time_us = sum of batch maxima / iters; med/min/max_us = median / fastest / slowest
 * batch mean. busbw = algbw (x 1, as nccl-tests for reduce).
 *
 * Usage: mpirun -np N mpi_reduce_bench [-b MIN] [-e MAX] [-f FACTOR] [-t SEC] [-c CONFIG]
 *                                      [-s SYSTEM] [-C CORES] [-H]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BATCHES 5

static size_t parse_bytes(const char* text) {
  char* end;
  double value = strtod(text, &end);
  switch (*end) {
    case 'K':
    case 'k':
      value *= 1024;
      break;
    case 'M':
    case 'm':
      value *= 1024 * 1024;
      break;
    case 'G':
    case 'g':
      value *= 1024.0 * 1024 * 1024;
      break;
  }
  return (size_t)value;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The slowest rank's time for `ops` reduces. */
static double timed_batch(float* send, float* recv, int count, long ops) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (long i = 0; i < ops; ++i) {
    MPI_Reduce(send, recv, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  }
  double mine = MPI_Wtime() - start, slowest;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Every rank contributes (rank + 1) * (i % 7): the root checks the exact sum. */
static const char* check(float* send, float* recv, int count, int rank, int size) {
  for (int i = 0; i < count; ++i) send[i] = (float)((rank + 1) * (i % 7));
  MPI_Reduce(send, recv, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  int ok = 1;
  if (rank == 0) {
    float ranks_sum = (float)size * (size + 1) / 2;
    for (int i = 0; i < count && ok; ++i) ok = recv[i] == ranks_sum * (float)(i % 7);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok ? "ok" : "FAIL";
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t min_bytes = 8, max_bytes = 64 << 20;
  double factor = 4, target = 0.2;
  const char* config = "default";
  const char* system = NULL;
  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN), header = 0, opt;
  while ((opt = getopt(argc, argv, "b:e:f:t:c:s:C:H")) != -1) {
    switch (opt) {
      case 'b':
        min_bytes = parse_bytes(optarg);
        break;
      case 'e':
        max_bytes = parse_bytes(optarg);
        break;
      case 'f':
        factor = atof(optarg);
        break;
      case 't':
        target = atof(optarg);
        break;
      case 'c':
        config = optarg;
        break;
      case 's':
        system = optarg;
        break;
      case 'C':
        cores = atoi(optarg);
        break;
      case 'H':
        header = 1;
        break;
      default:
        if (rank == 0) fprintf(stderr, "bad option\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (!system) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length;
    MPI_Get_library_version(version, &length);
    system = strstr(version, "Open MPI") ? "openmpi" : strstr(version, "MPICH") ? "mpich" : "mpi";
  }
  if (rank == 0 && header) {
    printf(
        "system,config,ranks,cores,oversub,op,dtype,count,bytes,iters,time_us,med_us,min_us,"
        "max_us,algbw_GBps,busbw_GBps,check\n");
  }
  size_t largest = max_bytes / sizeof(float) + 1;
  float* send = malloc(largest * sizeof(float));
  float* recv = malloc(largest * sizeof(float));
  for (size_t bytes = min_bytes; bytes <= max_bytes;
       bytes = factor > 1 ? (size_t)(bytes * factor) : bytes + 1) {
    int count = (int)(bytes / sizeof(float));
    if (count < 1) count = 1;
    const char* verdict = check(send, recv, count, rank, size);
    double probe = timed_batch(send, recv, count, 1);
    long warm = probe > 0.05 ? 1 : probe > 0.01 ? 2 : 5;
    double t_est = timed_batch(send, recv, count, warm) / warm;
    long iters = t_est > 0 ? (long)(target / t_est) : 1000000;
    if (iters < 3) iters = 3;
    if (iters > 1000000) iters = 1000000;
    int batches = iters < MAX_BATCHES ? (int)iters : MAX_BATCHES;
    long per_batch = (iters + batches - 1) / batches;
    double means[MAX_BATCHES], total = 0;
    int done = 0;
    double began = MPI_Wtime(), spent;
    for (; done < batches; ++done) {
      double t = timed_batch(send, recv, count, per_batch);
      means[done] = t / per_batch;
      total += t;
      spent = MPI_Wtime() - began;
      MPI_Bcast(&spent, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (spent > 2 * target && (long)(done + 1) * per_batch >= 3) {
        ++done;
        break;
      }
    }
    iters = (long)done * per_batch;
    qsort(means, (size_t)done, sizeof means[0], compare_doubles);
    double mean = total / iters, median = means[done / 2];
    double real_bytes = (double)count * sizeof(float);
    if (rank == 0) {
      printf("%s,%s,%d,%d,%d,reduce,float32,%d,%.0f,%ld,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%s\n", system,
             config, size, cores, size > cores, count, real_bytes, iters, mean * 1e6, median * 1e6,
             means[0] * 1e6, means[done - 1] * 1e6, real_bytes / mean / 1e9,
             real_bytes / mean / 1e9, verdict);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}

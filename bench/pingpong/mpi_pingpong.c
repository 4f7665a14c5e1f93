/*
 * mpi_pingpong.c -- the MPI twin of bench/pingpong/weft_pingpong.cc: same method, same CSV, so
 * bench/pingpong_compare.sh can put weft next to Open MPI measured in the same run.
 * Not built by CMake; the script compiles it:  mpicc.openmpi -O2 -o mpi_pingpong mpi_pingpong.c
 *
 * Method (per size; see weft_pingpong.cc for the full description):
 *   check     one round trip on a byte pattern, checked by rank 1 (received) and rank 0 (echo).
 *   pingpong  MPI_Send / MPI_Recv round trips; probe, ~50 ms warm-up, iters = target / round
 *             trip clamped to [min, max], up to 5 timed batches on rank 0's clock.
 *             lat_us = mean round trip / 2, bw_GBps = bytes / lat_us.
 *   stream    rank 0 MPI_Isends `window` messages back to back, rank 1 has MPI_Irecv'd them (into
 *             one buffer, like osu_bw) and answers with a 1-byte ack; lat_us = time per message.
 *   CSV: system,config,ranks,op,bytes,iters,window,lat_us,med_lat_us,min_lat_us,max_lat_us,
 *        bw_GBps,med_bw_GBps,check
 * Options: -z LIST -Z LIST|none -w N -t SEC -m N -M N -s NAME -c TAG -H  (as weft-pingpong)
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CSV_HEADER                                                                     \
  "system,config,ranks,op,bytes,iters,window,lat_us,med_lat_us,min_lat_us,max_lat_us," \
  "bw_GBps,med_bw_GBps,check"
#define MAX_BATCHES 5
#define MAX_SIZES 64
#define DATA_TAG 0
#define CONTROL_TAG 1

static int rank, peer;
static uint8_t *sbuf, *rbuf;
static size_t sizes[MAX_SIZES], stream_sizes[MAX_SIZES];
static int nsizes, nstream;
static int window = 8;
static double target = 0.5;
static long min_iters = 5, max_iters = 1000000;
static char system_name[128] = "";
static const char* config = "default";
static MPI_Request* reqs;

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'k':
    case 'K':
      v *= 1024.0;
      break;
    case 'm':
    case 'M':
      v *= 1024.0 * 1024.0;
      break;
    case 'g':
    case 'G':
      v *= 1024.0 * 1024.0 * 1024.0;
      break;
    default:
      break;
  }
  return (size_t)v;
}

static int parse_list(const char* list, size_t* out) {
  int n = 0;
  char *copy, *tok, *save = NULL;
  if (strcmp(list, "none") == 0 || !*list) return 0;
  copy = strdup(list);
  for (tok = strtok_r(copy, ",", &save); tok && n < MAX_SIZES; tok = strtok_r(NULL, ",", &save)) {
    size_t s = parse_size(tok);
    out[n++] = s ? s : 1;
  }
  free(copy);
  return n;
}

static double now_s(void) { return MPI_Wtime(); }

static inline uint8_t pattern(size_t bytes, size_t i) {
  return (uint8_t)((i * 131u + bytes * 7u + 17u) & 0xffu);
}

static long first_mismatch(const uint8_t* buf, size_t bytes) {
  size_t i;
  for (i = 0; i < bytes; i++)
    if (buf[i] != pattern(bytes, i)) return (long)i;
  return -1;
}

static void xsend(const void* p, size_t n, int tag) {
  MPI_Send(p, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
}
static void xrecv(void* p, size_t n, int tag) {
  MPI_Recv(p, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Rank 0 tells rank 1 a number; returns it on both. */
static long agree(long value) {
  int64_t v = value;
  if (rank == 0)
    xsend(&v, sizeof v, CONTROL_TAG);
  else
    xrecv(&v, sizeof v, CONTROL_TAG);
  return (long)v;
}

static void round_trips(size_t bytes, long n) {
  long i;
  if (rank == 0) {
    for (i = 0; i < n; i++) {
      xsend(sbuf, bytes, DATA_TAG);
      xrecv(rbuf, bytes, DATA_TAG);
    }
  } else {
    for (i = 0; i < n; i++) {
      xrecv(rbuf, bytes, DATA_TAG);
      xsend(rbuf, bytes, DATA_TAG);
    }
  }
}

static void windows(size_t bytes, long n) {
  long i;
  int k;
  uint8_t ack = 0;
  for (i = 0; i < n; i++) {
    if (rank == 0) {
      for (k = 0; k < window; k++)
        MPI_Isend(sbuf, (int)bytes, MPI_BYTE, 1, DATA_TAG, MPI_COMM_WORLD, &reqs[k]);
      MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
      xrecv(&ack, 1, CONTROL_TAG);
    } else {
      for (k = 0; k < window; k++)
        MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, 0, DATA_TAG, MPI_COMM_WORLD, &reqs[k]);
      MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
      xsend(&ack, 1, CONTROL_TAG);
    }
  }
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void timed(size_t bytes, const char* op, long win, int ok, void (*unit)(size_t, long)) {
  double t0, probe, per, total = 0, med, lat, med_lat;
  double batch_means[MAX_BATCHES];
  long warm, iters, batches, b;
  t0 = now_s();
  unit(bytes, 1);
  probe = now_s() - t0;
  warm = (long)(0.05 / (probe > 1e-9 ? probe : 1e-9));
  warm = agree(warm < 2 ? 2 : warm > 1000 ? 1000 : warm);
  t0 = now_s();
  unit(bytes, warm);
  per = (now_s() - t0) / (double)warm;
  iters = (long)(target / (per > 1e-9 ? per : 1e-9));
  iters = agree(iters < min_iters ? min_iters : iters > max_iters ? max_iters : iters);
  batches = iters < MAX_BATCHES ? iters : MAX_BATCHES;
  for (b = 0; b < batches; b++) {
    long n = iters / batches + (b < iters % batches ? 1 : 0);
    double dt;
    t0 = now_s();
    unit(bytes, n);
    dt = now_s() - t0;
    total += dt;
    batch_means[b] = dt / (double)n;
  }
  if (rank != 0) return;
  {
    double divisor = strcmp(op, "pingpong") == 0 ? 2.0 : (double)win;
    qsort(batch_means, (size_t)batches, sizeof(double), cmp_double);
    med = batches % 2 ? batch_means[batches / 2]
                      : 0.5 * (batch_means[batches / 2 - 1] + batch_means[batches / 2]);
    lat = total / (double)iters / divisor * 1e6;
    med_lat = med / divisor * 1e6;
    printf("%s,%s,2,%s,%zu,%ld,%ld,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%s\n", system_name, config, op,
           bytes, iters, win, lat, med_lat, batch_means[0] / divisor * 1e6,
           batch_means[batches - 1] / divisor * 1e6, (double)bytes / (lat * 1e3),
           (double)bytes / (med_lat * 1e3), ok ? "ok" : "FAIL");
    fflush(stdout);
  }
}

static void pingpong(size_t bytes) {
  size_t i;
  long bad;
  int64_t verdict, other = 0;
  for (i = 0; i < bytes; i++) sbuf[i] = pattern(bytes, i);
  memset(rbuf, 0, bytes);
  if (rank == 0) {
    xsend(sbuf, bytes, DATA_TAG);
    xrecv(rbuf, bytes, DATA_TAG);
    bad = first_mismatch(rbuf, bytes);
  } else {
    xrecv(rbuf, bytes, DATA_TAG);
    bad = first_mismatch(rbuf, bytes);
    xsend(rbuf, bytes, DATA_TAG);
  }
  if (bad >= 0)
    fprintf(stderr,
            "CHECK FAILED: rank %d pingpong bytes=%zu first mismatch at %ld: got %u want %u\n",
            rank, bytes, bad, rbuf[bad], pattern(bytes, (size_t)bad));
  verdict = bad >= 0;
  if (rank == 1)
    xsend(&verdict, sizeof verdict, CONTROL_TAG);
  else {
    xrecv(&other, sizeof other, CONTROL_TAG);
    verdict |= other;
  }
  timed(bytes, "pingpong", 1, verdict == 0, round_trips);
}

static void stream(size_t bytes) {
  size_t i;
  int64_t verdict = 0;
  for (i = 0; i < bytes; i++) sbuf[i] = pattern(bytes, i);
  memset(rbuf, 0, bytes);
  windows(bytes, 1);
  if (rank == 1) {
    long bad = first_mismatch(rbuf, bytes);
    if (bad >= 0) {
      fprintf(stderr, "CHECK FAILED: rank 1 stream bytes=%zu first mismatch at %ld\n", bytes, bad);
      verdict = 1;
    }
    xsend(&verdict, sizeof verdict, CONTROL_TAG);
  } else {
    xrecv(&verdict, sizeof verdict, CONTROL_TAG);
  }
  timed(bytes, "stream", window, verdict == 0, windows);
}

int main(int argc, char** argv) {
  int c, nranks, header = 0, i;
  size_t max_bytes = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  nsizes = parse_list("8,64,1K,64K,1M,16M,64M", sizes);
  nstream = parse_list("64M", stream_sizes);
  while ((c = getopt(argc, argv, "z:Z:w:t:m:M:s:c:H")) != -1) {
    switch (c) {
      case 'z':
        nsizes = parse_list(optarg, sizes);
        break;
      case 'Z':
        nstream = parse_list(optarg, stream_sizes);
        break;
      case 'w':
        window = atoi(optarg) > 0 ? atoi(optarg) : 1;
        break;
      case 't':
        target = atof(optarg);
        break;
      case 'm':
        min_iters = atol(optarg) > 0 ? atol(optarg) : 1;
        break;
      case 'M':
        max_iters = atol(optarg) > 0 ? atol(optarg) : 1;
        break;
      case 's':
        snprintf(system_name, sizeof system_name, "%s", optarg);
        break;
      case 'c':
        config = optarg;
        break;
      case 'H':
        header = 1;
        break;
      default:
        if (rank == 0)
          fprintf(stderr,
                  "usage: %s [-z sizes] [-Z stream sizes|none] [-w window] [-t sec] "
                  "[-m min] [-M max] [-s system] [-c config] [-H]\n",
                  argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (nranks != 2) {
    if (rank == 0) fprintf(stderr, "mpi_pingpong needs exactly 2 ranks (got %d)\n", nranks);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (!system_name[0]) {
    /* "Open MPI v4.1.4, ..." -> openmpi-4.1.4 */
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, maj = 0, min = 0, pat = 0;
    MPI_Get_library_version(version, &len);
    if (sscanf(version, "Open MPI v%d.%d.%d", &maj, &min, &pat) == 3)
      snprintf(system_name, sizeof system_name, "openmpi-%d.%d.%d", maj, min, pat);
    else
      snprintf(system_name, sizeof system_name, "mpi");
  }
  peer = 1 - rank;
  for (i = 0; i < nsizes; i++)
    if (sizes[i] > max_bytes) max_bytes = sizes[i];
  for (i = 0; i < nstream; i++)
    if (stream_sizes[i] > max_bytes) max_bytes = stream_sizes[i];
  sbuf = malloc(max_bytes);
  rbuf = malloc(max_bytes);
  reqs = malloc(sizeof(MPI_Request) * (size_t)window);
  if (!sbuf || !rbuf || !reqs) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(sbuf, 0, max_bytes);
  memset(rbuf, 0, max_bytes);
  if (rank == 0 && header) printf("%s\n", CSV_HEADER);
  for (i = 0; i < nsizes; i++) pingpong(sizes[i]);
  for (i = 0; i < nstream; i++) stream(stream_sizes[i]);
  free(sbuf);
  free(rbuf);
  free(reqs);
  MPI_Finalize();
  return 0;
}

// slot_stores.c — why weft learns its slot stores at run time (docs/algorithms.md, "Slot
// stores"): two processes on CPUs 0 and 1 exchange PIECE bytes through shared slots, the way a
// 2-member all_gather does, in 50 ms blocks that alternate between
//   - an empty round (its time is the round trip of one cache line between the two cores),
//   - ordinary stores into the slot (memcpy),
//   - streaming (non-temporal) stores into the slot,
// and prints one line per block, then the means grouped by the line round trip measured in the
// same block (below 200 ns: the cores share a cache; above: they do not).
//
// Build: cc -O2 -mavx2 -o /tmp/slot_stores bench/slot_stores.c
// Run:   /tmp/slot_stores 262144 30      (piece bytes, seconds)
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PIECE (64L << 20)

struct shared {
  _Atomic long round[2] __attribute__((aligned(64)));
  _Atomic long stop __attribute__((aligned(64)));
};

static struct shared* sh;
static char *slots, *inputs, *output;
static size_t piece;
static long round_no;
static int me;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static char* slot(int member, int parity) {
  return slots + ((size_t)member * 2 + parity) * MAX_PIECE;
}

static void arrive_and_wait(void) {
  ++round_no;
  atomic_store(&sh->round[me], round_no);
  while (atomic_load(&sh->round[1 - me]) < round_no) _mm_pause();
}

static void copy_streaming(char* to, const char* from, size_t bytes) {
  for (size_t k = 0; k + 32 <= bytes; k += 32) {
    _mm256_stream_si256((__m256i*)(to + k), _mm256_loadu_si256((const __m256i*)(from + k)));
  }
  _mm_sfence();
}

// kind 0: empty round; 1: ordinary stores; 2: streaming stores.
static void exchange(int kind) {
  int parity = (round_no + 1) & 1;
  if (kind == 0) return arrive_and_wait();
  if (kind == 1) memcpy(slot(me, parity), inputs + me * MAX_PIECE, piece);
  if (kind == 2) copy_streaming(slot(me, parity), inputs + me * MAX_PIECE, piece);
  arrive_and_wait();
  memcpy(output, slot(1 - me, parity), piece);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PIECE_BYTES SECONDS\n", argv[0]);
    return 2;
  }
  piece = (size_t)atol(argv[1]) / 64 * 64;
  double seconds = atof(argv[2]);
  if (piece == 0 || piece > MAX_PIECE || seconds <= 0 || seconds > 600) {
    fprintf(stderr, "PIECE_BYTES 64..64M, SECONDS up to 600\n");
    return 2;
  }
  sh = mmap(0, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  slots = mmap(0, 4 * MAX_PIECE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  inputs = mmap(0, 2 * MAX_PIECE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  output = aligned_alloc(4096, MAX_PIECE);  // equally aligned as the slots: memcpy slows otherwise
  if (sh == MAP_FAILED || slots == MAP_FAILED || inputs == MAP_FAILED || !output) return 1;
  memset(slots, 1, 4 * MAX_PIECE);
  memset(inputs, 2, 2 * MAX_PIECE);
  memset(output, 0, MAX_PIECE);
  pid_t child = fork();
  me = child ? 0 : 1;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(me, &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
  double end = now() + seconds, sum[2][3] = {{0}}, count[2] = {0};
  for (;;) {
    if (me == 0) atomic_store(&sh->stop, now() >= end);
    arrive_and_wait();
    if (atomic_load(&sh->stop)) break;
    double per_call[3];
    for (int kind = 0; kind < 3; ++kind) {
      long calls = 0;
      double start = now();
      // Both run the same number of calls: a fixed count per block, about 50 ms on this VM.
      long n = kind == 0 ? 50000 : (long)(2e8 / (piece + 4096));
      for (calls = 0; calls < n; ++calls) exchange(kind);
      per_call[kind] = (now() - start) / calls;
      arrive_and_wait();
    }
    if (me == 0) {
      int shared_cache = per_call[0] * 1e9 < 200;
      printf("round_trip_ns %.0f ordinary_us %.2f streaming_us %.2f\n", per_call[0] * 1e9,
             per_call[1] * 1e6, per_call[2] * 1e6);
      for (int kind = 0; kind < 3; ++kind) sum[shared_cache][kind] += per_call[kind];
      count[shared_cache] += 1;
    }
  }
  if (me == 0) {
    for (int shared_cache = 1; shared_cache >= 0; --shared_cache) {
      if (!count[shared_cache]) continue;
      double c = count[shared_cache];
      printf("%s: blocks %.0f round_trip_ns %.0f ordinary_us %.2f streaming_us %.2f\n",
             shared_cache ? "cores share a cache" : "cores do not share a cache", c,
             sum[shared_cache][0] / c * 1e9, sum[shared_cache][1] / c * 1e6,
             sum[shared_cache][2] / c * 1e6);
    }
    waitpid(child, NULL, 0);
  }
  return 0;
}

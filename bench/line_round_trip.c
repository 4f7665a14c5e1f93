// line_round_trip.c — the round trip of one cache line between CPUs 0 and 1, in ns: two
// threads pass a counter back and forth. On this VM it tells which mode the host runs the two
// vCPUs in (docs/PERFORMANCE.md, "Two modes"): about 100 ns when they share a core complex,
// 400-600 ns when they do not. bench/small_by_mode.sh runs it before and after each invocation.
//
// Build: cc -O2 -pthread -o /tmp/line_round_trip bench/line_round_trip.c
// Run:   /tmp/line_round_trip 20000      (round trips; prints the mean in ns)
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) _Atomic long ping;
static _Alignas(64) _Atomic long pong;
static long round_trips = 20000;

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void* answer(void* unused) {
  (void)unused;
  pin_to(1);
  for (long i = 1; i <= round_trips; i++) {
    while (atomic_load_explicit(&ping, memory_order_acquire) != i) {
    }
    atomic_store_explicit(&pong, i, memory_order_release);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) round_trips = atol(argv[1]);
  if (round_trips < 1) return 2;
  pthread_t other;
  pthread_create(&other, NULL, answer, NULL);
  pin_to(0);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 1; i <= round_trips; i++) {
    atomic_store_explicit(&ping, i, memory_order_release);
    while (atomic_load_explicit(&pong, memory_order_acquire) != i) {
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  pthread_join(other, NULL);
  double ns = (end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec);
  printf("%.0f\n", ns / round_trips);
  return 0;
}

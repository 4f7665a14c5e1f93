// raw_tcp_pingpong.c — the floor under any TCP transport: `bytes` back and forth on one
// socket with nothing but send and recv, the receiver either polling (recv with MSG_DONTWAIT
// until the bytes are in) or sleeping in a blocking recv. bench/hosts_pingpong.sh puts weft
// next to it between two simulated hosts.
//
// Build: cc -O2 -o /tmp/raw_tcp_pingpong bench/pingpong/raw_tcp_pingpong.c
// Run:   raw_tcp_pingpong -s PORT                    (echoes until the client leaves)
//        raw_tcp_pingpong -c ADDR PORT BYTES ITERS   (prints the median one-way us of 5 batches)
// POLL=1 in the environment of both makes the receiver poll. Every run ends within 60 s
// (alarm), so a lost peer cannot hang a benchmark.
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kBatches = 5, kMaxBytes = 1 << 20 };

static int polling;

static int exchange_all(int fd, char* buffer, size_t bytes, int sending) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = sending ? send(fd, buffer + done, bytes - done, MSG_NOSIGNAL)
                        : recv(fd, buffer + done, bytes - done, polling ? MSG_DONTWAIT : 0);
    if (n > 0) {
      done += (size_t)n;
    } else if (!(n < 0 && (errno == EAGAIN || errno == EINTR))) {
      return -1;  // the peer left, or a real error
    }
  }
  return 0;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void no_delay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int serve(int port) {
  int listener = socket(AF_INET6, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in6 address = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
  if (bind(listener, (struct sockaddr*)&address, sizeof address) || listen(listener, 1)) {
    perror("raw_tcp_pingpong: listen");
    return 1;
  }
  int fd = accept(listener, NULL, NULL);
  if (fd < 0) return 1;
  no_delay(fd);
  unsigned header[1];
  static char buffer[kMaxBytes];
  // The client announces the size first, then the server echoes messages of it until the end.
  if (exchange_all(fd, (char*)header, sizeof header, 0)) return 1;
  size_t bytes = header[0] > kMaxBytes ? kMaxBytes : header[0];
  while (exchange_all(fd, buffer, bytes, 0) == 0 && exchange_all(fd, buffer, bytes, 1) == 0) {
  }
  return 0;
}

static int client(const char* host, int port, size_t bytes, long iters) {
  struct addrinfo* found = NULL;
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
  if (getaddrinfo(host, service, &hints, &found)) return 1;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {  // the server may start late
    fd = socket(found->ai_family, SOCK_STREAM, 0);
    if (connect(fd, found->ai_addr, found->ai_addrlen)) {
      close(fd);
      fd = -1;
      usleep(20000);
    }
  }
  if (fd < 0) return 1;
  no_delay(fd);
  if (bytes > kMaxBytes) bytes = kMaxBytes;
  unsigned header[1] = {(unsigned)bytes};
  static char buffer[kMaxBytes];
  if (exchange_all(fd, (char*)header, sizeof header, 1)) return 1;
  double batches[kBatches];
  for (int batch = -1; batch < kBatches; batch++) {  // batch -1 warms up
    double start = now_us();
    for (long i = 0; i < iters; i++) {
      if (exchange_all(fd, buffer, bytes, 1) || exchange_all(fd, buffer, bytes, 0)) return 1;
    }
    if (batch >= 0) batches[batch] = (now_us() - start) / iters / 2;
  }
  qsort(batches, kBatches, sizeof batches[0], compare);
  printf("%zu %.2f\n", bytes, batches[kBatches / 2]);
  return 0;
}

int main(int argc, char** argv) {
  alarm(60);
  polling = getenv("POLL") && strcmp(getenv("POLL"), "1") == 0;
  if (argc == 3 && strcmp(argv[1], "-s") == 0) return serve(atoi(argv[2]));
  if (argc == 6 && strcmp(argv[1], "-c") == 0) {
    return client(argv[2], atoi(argv[3]), (size_t)atol(argv[4]), atol(argv[5]));
  }
  fprintf(stderr, "usage: %s -s PORT | -c ADDR PORT BYTES ITERS\n", argv[0]);
  return 2;
}

// weft-pingpong — point-to-point latency and bandwidth between two weft ranks.
//
// The same measurement as bench/pingpong/mpi_pingpong.c (kept line for line comparable), so that
// bench/pingpong_compare.sh can put weft next to Open MPI measured in the same run.
//
// Run two ranks, e.g.
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 ./weft-pingpong -H &
//   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29555 ./weft-pingpong
//
// Method (per size):
//   check     one round trip on a byte pattern; rank 1 checks what it got (every byte) and
//             sends it back, rank 0 checks the echo: a broken run prints check=FAIL.
//   pingpong  rank 0 sends `bytes`, rank 1 receives and sends the same number back. After one
//             probe round trip and a warm-up (~50 ms, at least 2 round trips) rank 0 picks
//             iters = target / round trip (clamped to [min, max]) and runs them in up to 5
//             back-to-back batches, timing each on its own clock.
//             lat_us = mean round trip / 2; med/min/max_lat_us = median/fastest/slowest batch;
//             bw_GBps = bytes / lat (1e9 B/s), med_bw_GBps from med_lat_us.
//   stream    unidirectional: rank 0 isends `window` messages back to back, rank 1 has irecv'd
//             `window` messages (into one buffer, as OSU's osu_bw does) and, when all arrived,
//             sends a 1-byte ack. iters = windows; lat_us = time per message;
//             bw_GBps = bytes / lat_us.
//   Only rank 0 prints, one CSV row per (op, size):
//     system,config,ranks,op,bytes,iters,window,lat_us,med_lat_us,min_lat_us,max_lat_us,
//     bw_GBps,med_bw_GBps,check
//   (for point to point busbw = algbw = bw_GBps.)
//
// Options:
//   -z LIST    ping-pong sizes, comma separated, K/M/G suffixes (default 8,64,1K,64K,1M,16M,64M)
//   -Z LIST    streaming sizes (default 64M; "none" to skip)
//   -w N       streaming window: messages per ack (default 8)
//   -t SEC     target timed seconds per (op, size) (default 0.5)
//   -m N / -M N  min / max timed iterations (default 5 / 1000000)
//   -s NAME    `system` column (default weft-<version>)
//   -c TAG     `config` column (default tcp-lo)
//   -H         print the CSV header first
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr const char* kHeader =
    "system,config,ranks,op,bytes,iters,window,lat_us,med_lat_us,min_lat_us,max_lat_us,"
    "bw_GBps,med_bw_GBps,check";
constexpr int kMaxBatches = 5;
constexpr int kDataTag = 0;
constexpr int kControlTag = 1;

struct Options {
  std::vector<size_t> sizes;
  std::vector<size_t> stream_sizes;
  int window = 8;
  double target = 0.5;
  long min_iters = 5;
  long max_iters = 1000000;
  std::string system;
  std::string config = "tcp-lo";
  bool header = false;
};

size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
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
  return static_cast<size_t>(v);
}

std::vector<size_t> parse_list(const std::string& list) {
  std::vector<size_t> out;
  if (list == "none" || list.empty()) return out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    if (!item.empty()) out.push_back(std::max<size_t>(1, parse_size(item.c_str())));
    start = comma + 1;
  }
  return out;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline uint8_t pattern(size_t bytes, size_t i) {
  return static_cast<uint8_t>((i * 131u + bytes * 7u + 17u) & 0xffu);
}

// Index of the first byte that differs from the pattern, or -1.
long first_mismatch(const uint8_t* buf, size_t bytes) {
  for (size_t i = 0; i < bytes; i++)
    if (buf[i] != pattern(bytes, i)) return static_cast<long>(i);
  return -1;
}

class Bench {
 public:
  Bench(std::shared_ptr<weft::ProcessGroup> group, Options options)
      : group_(std::move(group)), opt_(std::move(options)) {
    rank_ = group_->rank();
    peer_ = 1 - rank_;
    size_t max_bytes = 1;
    for (size_t s : opt_.sizes) max_bytes = std::max(max_bytes, s);
    for (size_t s : opt_.stream_sizes) max_bytes = std::max(max_bytes, s);
    sbuf_.assign(max_bytes, 0);
    rbuf_.assign(max_bytes, 0);
  }

  void run() {
    if (rank_ == 0 && opt_.header) std::printf("%s\n", kHeader);
    for (size_t bytes : opt_.sizes) pingpong(bytes);
    for (size_t bytes : opt_.stream_sizes) stream(bytes);
    std::fflush(stdout);
  }

 private:
  void send(const void* p, size_t n, int tag = kDataTag) {
    group_->send(weft::ConstBufferView(p, n, weft::DType::kUInt8), peer_, tag);
  }
  void recv(void* p, size_t n, int tag = kDataTag) {
    group_->recv(weft::BufferView(p, n, weft::DType::kUInt8), peer_, tag);
  }
  // Rank 0 tells rank 1 a number (both call it; returns the value on both).
  long agree(long value) {
    int64_t v = value;
    if (rank_ == 0)
      send(&v, sizeof v, kControlTag);
    else
      recv(&v, sizeof v, kControlTag);
    return static_cast<long>(v);
  }

  void round_trips(size_t bytes, long n) {
    if (rank_ == 0) {
      for (long i = 0; i < n; i++) {
        send(sbuf_.data(), bytes);
        recv(rbuf_.data(), bytes);
      }
    } else {
      for (long i = 0; i < n; i++) {
        recv(rbuf_.data(), bytes);
        send(rbuf_.data(), bytes);
      }
    }
  }

  // One checked round trip; true on both ranks when both saw the right bytes.
  bool check_pingpong(size_t bytes) {
    for (size_t i = 0; i < bytes; i++) sbuf_[i] = pattern(bytes, i);
    std::memset(rbuf_.data(), 0, bytes);
    long bad = -1;
    if (rank_ == 0) {
      send(sbuf_.data(), bytes);
      recv(rbuf_.data(), bytes);
      bad = first_mismatch(rbuf_.data(), bytes);
    } else {
      recv(rbuf_.data(), bytes);
      bad = first_mismatch(rbuf_.data(), bytes);
      send(rbuf_.data(), bytes);
    }
    if (bad >= 0)
      std::fprintf(
          stderr,
          "CHECK FAILED: rank %d pingpong bytes=%zu first mismatch at %ld: got %u want %u\n", rank_,
          bytes, bad, rbuf_[bad], pattern(bytes, bad));
    // Rank 1's verdict travels back to rank 0.
    int64_t verdict = bad >= 0 ? 1 : 0;
    if (rank_ == 1)
      send(&verdict, sizeof verdict, kControlTag);
    else {
      int64_t other = 0;
      recv(&other, sizeof other, kControlTag);
      verdict |= other;
    }
    return verdict == 0;
  }

  // Probe, warm up, pick iters (rank 0 decides), run the timed batches; rank 0 prints the row.
  void timed(size_t bytes, const char* op, long window, bool ok,
             void (Bench::*unit)(size_t, long)) {
    double t0 = now_s();
    (this->*unit)(bytes, 1);
    double probe = now_s() - t0;
    long warm = agree(std::clamp<long>(static_cast<long>(0.05 / std::max(probe, 1e-9)), 2, 1000));
    t0 = now_s();
    (this->*unit)(bytes, warm);
    double per = (now_s() - t0) / static_cast<double>(warm);
    long iters = agree(std::clamp<long>(static_cast<long>(opt_.target / std::max(per, 1e-9)),
                                        opt_.min_iters, opt_.max_iters));
    long batches = std::min<long>(kMaxBatches, iters);
    std::vector<double> batch_means;
    double total = 0;
    for (long b = 0; b < batches; b++) {
      long n = iters / batches + (b < iters % batches ? 1 : 0);
      t0 = now_s();
      (this->*unit)(bytes, n);
      double dt = now_s() - t0;
      total += dt;
      batch_means.push_back(dt / static_cast<double>(n));
    }
    if (rank_ != 0) return;
    // Per message: a round trip is 2 messages, a stream window is `window` messages.
    double divisor = std::strcmp(op, "pingpong") == 0 ? 2.0 : static_cast<double>(window);
    std::vector<double> sorted = batch_means;
    std::sort(sorted.begin(), sorted.end());
    double med = sorted.size() % 2
                     ? sorted[sorted.size() / 2]
                     : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
    double lat = total / static_cast<double>(iters) / divisor * 1e6;
    double med_lat = med / divisor * 1e6;
    double min_lat = sorted.front() / divisor * 1e6;
    double max_lat = sorted.back() / divisor * 1e6;
    std::printf("%s,%s,2,%s,%zu,%ld,%ld,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%s\n", opt_.system.c_str(),
                opt_.config.c_str(), op, bytes, iters, window, lat, med_lat, min_lat, max_lat,
                static_cast<double>(bytes) / (lat * 1e3),
                static_cast<double>(bytes) / (med_lat * 1e3), ok ? "ok" : "FAIL");
    std::fflush(stdout);
  }

  void pingpong(size_t bytes) {
    bool ok = check_pingpong(bytes);
    timed(bytes, "pingpong", 1, ok, &Bench::round_trips);
  }

  // `n` windows of `window` messages from rank 0 to rank 1, each acknowledged with 1 byte.
  void windows(size_t bytes, long n) {
    std::vector<std::shared_ptr<weft::Work>> works(static_cast<size_t>(opt_.window));
    uint8_t ack = 0;
    for (long i = 0; i < n; i++) {
      if (rank_ == 0) {
        for (auto& w : works)
          w = group_->isend(weft::ConstBufferView(sbuf_.data(), bytes, weft::DType::kUInt8), 1,
                            kDataTag);
        for (auto& w : works) w->wait();
        recv(&ack, 1, kControlTag);
      } else {
        for (auto& w : works)
          w = group_->irecv(weft::BufferView(rbuf_.data(), bytes, weft::DType::kUInt8), 0,
                            kDataTag);
        for (auto& w : works) w->wait();
        send(&ack, 1, kControlTag);
      }
    }
  }

  void stream(size_t bytes) {
    for (size_t i = 0; i < bytes; i++) sbuf_[i] = pattern(bytes, i);
    std::memset(rbuf_.data(), 0, bytes);
    windows(bytes, 1);
    int64_t verdict = 0;
    if (rank_ == 1) {
      long bad = first_mismatch(rbuf_.data(), bytes);
      if (bad >= 0) {
        std::fprintf(stderr, "CHECK FAILED: rank 1 stream bytes=%zu first mismatch at %ld\n", bytes,
                     bad);
        verdict = 1;
      }
      send(&verdict, sizeof verdict, kControlTag);
    } else {
      recv(&verdict, sizeof verdict, kControlTag);
    }
    timed(bytes, "stream", opt_.window, verdict == 0, &Bench::windows);
  }

  std::shared_ptr<weft::ProcessGroup> group_;
  Options opt_;
  int rank_ = 0;
  int peer_ = 1;
  std::vector<uint8_t> sbuf_, rbuf_;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  opt.sizes = parse_list("8,64,1K,64K,1M,16M,64M");
  opt.stream_sizes = parse_list("64M");
  opt.system = std::string("weft-") + weft::version();
  int c;
  while ((c = getopt(argc, argv, "z:Z:w:t:m:M:s:c:H")) != -1) {
    switch (c) {
      case 'z':
        opt.sizes = parse_list(optarg);
        break;
      case 'Z':
        opt.stream_sizes = parse_list(optarg);
        break;
      case 'w':
        opt.window = std::max(1, std::atoi(optarg));
        break;
      case 't':
        opt.target = std::atof(optarg);
        break;
      case 'm':
        opt.min_iters = std::max(1L, std::atol(optarg));
        break;
      case 'M':
        opt.max_iters = std::max(1L, std::atol(optarg));
        break;
      case 's':
        opt.system = optarg;
        break;
      case 'c':
        opt.config = optarg;
        break;
      case 'H':
        opt.header = true;
        break;
      default:
        std::fprintf(stderr,
                     "usage: %s [-z sizes] [-Z stream sizes|none] [-w window] [-t sec] "
                     "[-m min] [-M max] [-s system] [-c config] [-H]\n",
                     argv[0]);
        return 2;
    }
  }
  try {
    auto group = weft::init_process_group();
    if (group->size() != 2) {
      std::fprintf(stderr, "weft-pingpong needs exactly 2 ranks (got %d)\n", group->size());
      return 2;
    }
    Bench(group, opt).run();
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "weft-pingpong: %s\n", e.what());
    return 1;
  }
  return 0;
}

// all_reduce written with nothing but point-to-point messages (all_reduce.py, "implement
// torch.distributed.all_reduce using only send and recv"), two ways:
//
//  naive: reduce to rank 0 (every other rank sends it its data; rank 0 adds them up), then
//         broadcast (rank 0 sends the sum to every other rank). Rank 0 moves 2(p-1) full
//         messages one after another: time ~ 2(p-1)(t_s + m t_w).
//  ring:  cut the data into p chunks. Scatter-reduce: in p-1 steps every rank sends one chunk
//         to its right neighbour and adds the chunk from its left one, so that each rank ends
//         with one chunk fully summed. All-gather: p-1 more steps pass the summed chunks round
//         the ring. Every rank sends and receives at once, m/p per step:
//         time ~ 2(p-1)(t_s + (m/p) t_w), nearly independent of p for large m.
//
// Unlike the Python original, the count need not be a multiple of the world size: chunk c
// covers elements [c*m/p, (c+1)*m/p), so chunks differ by at most one element (and may be
// empty when m < p). Each result is checked against weft's own all_reduce of the same data and
// against the sum computed directly. The data are small integers, so every sum is exact in
// float whatever the order of the additions. (To compare their speed, time many calls on a
// quiet machine; weft-bench does that for weft's own algorithms.)
//
//   weftrun -n 3 ./naive_and_ring_all_reduce
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kNaiveTag = 10, kRingTag = 11;

// Reduce to rank 0, then broadcast from it.
void naive_all_reduce(weft::ProcessGroup& group, std::vector<float>& data) {
  const int rank = group.rank(), size = group.size();
  if (rank == 0) {
    std::vector<float> incoming(data.size());
    for (int src = 1; src < size; ++src) {
      group.recv(incoming, src, kNaiveTag);
      for (std::size_t i = 0; i < data.size(); ++i) data[i] += incoming[i];
    }
    for (int dst = 1; dst < size; ++dst) group.send(data, dst, kNaiveTag);
  } else {
    group.send(data, 0, kNaiveTag);
    group.recv(data, 0, kNaiveTag);
  }
}

// Scatter-reduce, then all-gather, round the ring.
void ring_all_reduce(weft::ProcessGroup& group, std::vector<float>& data) {
  const int rank = group.rank(), size = group.size();
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  auto chunk_begin = [&](int c) { return data.size() * c / size; };
  // A view of chunk c (taken mod size) of data.
  auto chunk = [&](int c) {
    c = ((c % size) + size) % size;
    return std::span<float>(data.data() + chunk_begin(c), chunk_begin(c + 1) - chunk_begin(c));
  };
  std::vector<float> incoming(data.size() / size + 1);

  // Scatter-reduce. At step s rank r sends chunk r - s and receives chunk r - s - 1, which
  // its left neighbour sends at the same step; after p - 1 steps rank r holds chunk r + 1 summed
  // over all ranks. Both ends of a message know its chunk's size, so both skip empty chunks.
  for (int step = 0; step < size - 1; ++step) {
    std::span<float> to_send = chunk(rank - step), to_add = chunk(rank - step - 1);
    std::span<float> received(incoming.data(), to_add.size());
    std::shared_ptr<weft::Work> recv_work, send_work;
    if (!received.empty()) recv_work = group.irecv(received, left, kRingTag);
    if (!to_send.empty()) send_work = group.isend(to_send, right, kRingTag);
    if (recv_work) recv_work->wait();
    for (std::size_t i = 0; i < to_add.size(); ++i) to_add[i] += received[i];
    if (send_work) send_work->wait();  // to_send may change at the next step
  }
  // All-gather. At step s rank r passes on summed chunk r + 1 - s and receives chunk r - s
  // into place.
  for (int step = 0; step < size - 1; ++step) {
    std::span<float> to_send = chunk(rank + 1 - step), to_receive = chunk(rank - step);
    std::shared_ptr<weft::Work> recv_work, send_work;
    if (!to_receive.empty()) recv_work = group.irecv(to_receive, left, kRingTag);
    if (!to_send.empty()) send_work = group.isend(to_send, right, kRingTag);
    if (recv_work) recv_work->wait();
    if (send_work) send_work->wait();
  }
}

// Rank r's data: small integers, so that sums are exact.
std::vector<float> make_data(int rank, std::size_t count) {
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * (i % 13 + 1));
  return data;
}

}  // namespace

int main() {
  int rank = -1;
  try {
    std::shared_ptr<weft::ProcessGroup> group = weft::init_process_group();
    rank = group->rank();
    const int size = group->size();

    // Counts that few world sizes divide; 1 leaves most ring chunks empty.
    for (std::size_t count : {1, 7, 1001, 100003}) {
      std::vector<float> naive = make_data(rank, count), ring = naive, reference = naive;
      naive_all_reduce(*group, naive);
      ring_all_reduce(*group, ring);
      group->all_reduce(reference, weft::ReduceOp::kSum);

      for (std::size_t i = 0; i < count; ++i) {
        // the sum over r of (r + 1) * (i % 13 + 1)
        const float expected = static_cast<float>(size * (size + 1) / 2 * (i % 13 + 1));
        if (naive[i] != expected || ring[i] != expected || reference[i] != expected) {
          throw std::runtime_error(
              "count " + std::to_string(count) + ", element " + std::to_string(i) + ": naive " +
              std::to_string(naive[i]) + ", ring " + std::to_string(ring[i]) + ", weft " +
              std::to_string(reference[i]) + ", expected " + std::to_string(expected));
        }
      }
      if (rank == 0) {
        std::string head;  // the first few elements of the result
        for (std::size_t i = 0; i < count && i < 3; ++i) {
          head += (i ? ", " : "") + std::to_string(static_cast<int>(ring[i]));
        }
        std::printf("count %6zu: naive, ring and weft's all_reduce agree: [%s%s]\n", count,
                    head.c_str(), count > 3 ? ", ..." : "");
      }
    }
    std::printf("Rank %d: OK\n", rank);
    return 0;
  } catch (const std::exception& e) {
    if (rank >= 0) {
      std::fprintf(stderr, "Rank %d: FAILED: %s\n", rank, e.what());
    } else {
      std::fprintf(stderr, "naive_and_ring_all_reduce: FAILED to join the job: %s\n", e.what());
    }
    return 1;
  }
}

#include "result_check.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "element_codec.h"

namespace weft_bench {
namespace {

constexpr unsigned char kSentinel = 0xA5;

void fill_values(weft::DType t, void* base, std::size_t first, std::size_t n, const DataPattern& p,
                 int value_rank, std::size_t value_first) {
  for (std::size_t j = 0; j < n; ++j) {
    store_bits(t, base, first + j, p.input_bits(value_rank, value_first + j));
  }
}

void fill_sentinel(weft::DType t, void* base, std::size_t first, std::size_t n) {
  std::memset(static_cast<unsigned char*>(base) + first * weft::size_of(t), kSentinel,
              n * weft::size_of(t));
}

// Counts mismatches of base[first + j] against expected(j) for j < n.
class Comparer {
 public:
  Comparer(const BenchCase& c, int rank) : c_(c), rank_(rank) {}

  template <typename Expected>
  void compare(const void* base, std::size_t first, std::size_t n, Expected expected,
               const char* where) {
    for (std::size_t j = 0; j < n; ++j) {
      const uint64_t got = load_bits(c_.dtype, base, first + j);
      const uint64_t want = expected(j);
      if (got == want) continue;
      if (wrong_ == 0) {
        std::fprintf(stderr,
                     "weft-bench: CHECK FAILED: rank %d %s %s %s count=%zu%s: first mismatch in "
                     "%s at element %zu: got %s, expected %s\n",
                     rank_, std::string(traits_of(c_.op).name).c_str(),
                     std::string(weft::name_of(c_.dtype)).c_str(),
                     traits_of(c_.op).reduces ? std::string(weft::name_of(c_.redop)).c_str() : "-",
                     c_.shape.count, c_.in_place ? " in-place" : "", where, first + j,
                     render_bits(c_.dtype, got).c_str(), render_bits(c_.dtype, want).c_str());
      }
      ++wrong_;
    }
  }
  uint64_t wrong() const { return wrong_; }

 private:
  const BenchCase& c_;
  int rank_;
  uint64_t wrong_ = 0;
};

}  // namespace

void fill_for_check(const BenchCase& c, CaseBuffers& b, const DataPattern& p, int me,
                    int /*world_size*/) {
  const weft::DType t = c.dtype;
  const std::size_t count = c.shape.count;
  const std::size_t block = c.shape.block;
  fill_sentinel(t, b.send(), 0, count);
  fill_sentinel(t, b.recv(), 0, count);
  const bool root = me == c.root;
  switch (c.op) {
    case BenchOp::kAllReduce:
    case BenchOp::kReduce:
      fill_values(t, c.in_place ? b.recv() : b.send(), 0, count, p, me, 0);
      break;
    case BenchOp::kBroadcast:
      if (root) fill_values(t, c.in_place ? b.recv() : b.send(), 0, count, p, c.root, 0);
      break;
    case BenchOp::kAllGather:
    case BenchOp::kGather:
      if (c.in_place && (c.op == BenchOp::kAllGather || root)) {
        fill_values(t, b.recv(), me * block, block, p, me, 0);
      } else {
        fill_values(t, b.send(), 0, block, p, me, 0);
      }
      break;
    case BenchOp::kReduceScatter:
      fill_values(t, c.in_place ? b.recv() : b.send(), 0, count, p, me, 0);
      break;
    case BenchOp::kScatter:
      if (root) fill_values(t, b.send(), 0, count, p, c.root, 0);
      break;
    case BenchOp::kAllToAll:
    case BenchOp::kSendRecv:
      fill_values(t, b.send(), 0, count, p, me, 0);
      break;
    case BenchOp::kBarrier:
      break;
  }
}

uint64_t count_wrong(const BenchCase& c, CaseBuffers& b, const DataPattern& p, int me, int n) {
  const std::size_t count = c.shape.count;
  const std::size_t block = c.shape.block;
  const bool root = me == c.root;
  Comparer cmp(c, me);
  switch (c.op) {
    case BenchOp::kAllReduce:
      cmp.compare(
          b.recv(), 0, count, [&](std::size_t i) { return p.reduced_bits(i); }, "data");
      break;
    case BenchOp::kReduce:
      if (root) {
        cmp.compare(
            b.recv(), 0, count, [&](std::size_t i) { return p.reduced_bits(i); }, "data");
      } else {
        // Out of place, a non-root's output is scratch; its input must be as it was.
        cmp.compare(
            c.in_place ? b.recv() : b.send(), 0, count,
            [&](std::size_t i) { return p.input_bits(me, i); },
            "a non-root's data (must be unchanged)");
      }
      break;
    case BenchOp::kBroadcast:
      cmp.compare(
          b.recv(), 0, count, [&](std::size_t i) { return p.input_bits(c.root, i); }, "data");
      break;
    case BenchOp::kAllGather:
    case BenchOp::kGather:
      if (c.op == BenchOp::kGather && !root) break;
      cmp.compare(
          b.recv(), 0, count,
          [&](std::size_t i) { return p.input_bits(static_cast<int>(i / block), i % block); },
          "output");
      break;
    case BenchOp::kReduceScatter: {
      const std::size_t first = c.in_place ? me * block : 0;
      cmp.compare(
          b.recv(), first, block, [&](std::size_t j) { return p.reduced_bits(me * block + j); },
          "output");
      break;
    }
    case BenchOp::kScatter: {
      const bool own_block = c.in_place && root;
      cmp.compare(
          own_block ? b.send() : b.recv(), own_block ? me * block : 0, block,
          [&](std::size_t j) { return p.input_bits(c.root, me * block + j); }, "output");
      break;
    }
    case BenchOp::kAllToAll:
      cmp.compare(
          b.recv(), 0, count,
          [&](std::size_t i) {
            return p.input_bits(static_cast<int>(i / block), me * block + i % block);
          },
          "output");
      break;
    case BenchOp::kSendRecv:
      cmp.compare(
          b.recv(), 0, count, [&](std::size_t i) { return p.input_bits((me + n - 1) % n, i); },
          "output");
      break;
    case BenchOp::kBarrier:
      break;
  }
  return cmp.wrong();
}

}  // namespace weft_bench

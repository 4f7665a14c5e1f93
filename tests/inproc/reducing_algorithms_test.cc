// The reducing algorithms of the coll layer, each run directly (no API, no selector) on thread
// ranks: all-reduce (ring, recursive doubling, Rabenseifner, naive, shared memory), ring and
// shared-memory reduce-scatter, binomial and shared-memory reduce, inclusive and exclusive scan.
// Thread ranks share one host, so the shared-memory algorithms run on a real window.
//
// Every case derives its inputs from (seed, rank, index) with values small enough that every
// dtype holds every partial result exactly (integers wrap the same way in any order), so each
// rank computes the expected result with a plain loop and compares bytes exactly. Many cases
// run inside one set of ranks, one CollectiveCall each, to keep the file fast.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "coll/all_reduce/naive_all_reduce.h"
#include "coll/all_reduce/rabenseifner_all_reduce.h"
#include "coll/all_reduce/recursive_doubling_all_reduce.h"
#include "coll/all_reduce/ring_all_reduce.h"
#include "coll/reduce/binomial_reduce.h"
#include "coll/reduce_scatter/recursive_halving_reduce_scatter.h"
#include "coll/reduce_scatter/ring_reduce_scatter.h"
#include "coll/scan/scan.h"
#include "coll/shm/shm_collectives.h"
#include "support/collective_harness.h"
#include "support/thread_ranks.h"
#include "support/typed_values.h"

namespace weft {
namespace {

using Bytes = std::vector<uint8_t>;
using testing::make_call;
using testing::run_ranks_leaving_in_turn;
using testing::store_value;

constexpr std::size_t kSmallSegment = 64;  // bytes: many segments even for small counts

// The ops the algorithms reduce themselves (the API turns AVG and PREMUL_SUM into sums).
std::vector<ReduceOp::Kind> ops_for(DType dtype) {
  if (testing::is_float(dtype))
    return {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax};
  return {ReduceOp::kSum,  ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax,
          ReduceOp::kBand, ReduceOp::kBor,     ReduceOp::kBxor};
}

// --- test data ---------------------------------------------------------------------------------

// The value rank `rank` contributes at `index`, before conversion to dtype. Ranges keep every
// partial result exact: bfloat16 sums of up to 8 values in [-8, 7], float16 in [-56, 56],
// products of values in {-1, 1, 2} (unsigned: {1, 2}), bool 0 or 1.
int64_t value_of(DType dtype, ReduceOp::Kind op, int seed, int rank, std::size_t index) {
  const int64_t p = testing::pattern(seed, rank, index);  // 0 .. 112
  const bool is_unsigned = dtype == DType::kUInt8;
  if (dtype == DType::kBool) return p % 2;
  if (op == ReduceOp::kProduct) return is_unsigned ? 1 + p % 2 : (p % 3 == 0 ? -1 : p % 3);
  if (dtype == DType::kBFloat16) return p % 16 - 8;
  return is_unsigned ? p : p - 56;
}

int64_t combine(ReduceOp::Kind op, int64_t a, int64_t b) {
  switch (op) {
    case ReduceOp::kProduct:
      return a * b;
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kBand:
      return a & b;
    case ReduceOp::kBor:
      return a | b;
    case ReduceOp::kBxor:
      return a ^ b;
    default:
      return a + b;  // SUM, AVG and PREMUL_SUM reduce as SUM in the algorithms
  }
}

// Rank `rank`'s input: `count` elements starting at global index `first`.
Bytes input_of(DType dtype, ReduceOp::Kind op, int seed, int rank, std::size_t count,
               std::size_t first = 0) {
  const std::size_t esize = size_of(dtype);
  Bytes bytes(count * esize);
  for (std::size_t i = 0; i < count; ++i) {
    store_value(dtype, bytes.data(), i,
                static_cast<double>(value_of(dtype, op, seed, rank, first + i)));
  }
  return bytes;
}

// The reduction over ranks [0, ranks) of elements [first, first + count).
Bytes expected_of(DType dtype, ReduceOp::Kind op, int seed, int ranks, std::size_t count,
                  std::size_t first = 0) {
  const std::size_t esize = size_of(dtype);
  Bytes bytes(count * esize);
  for (std::size_t i = 0; i < count; ++i) {
    int64_t v = value_of(dtype, op, seed, 0, first + i);
    for (int r = 1; r < ranks; ++r) v = combine(op, v, value_of(dtype, op, seed, r, first + i));
    store_value(dtype, bytes.data(), i, static_cast<double>(v));
  }
  return bytes;
}

std::string describe(const std::string& what, int size, int rank, DType dtype, ReduceOp::Kind op,
                     std::size_t count) {
  std::ostringstream out;
  out << what << " size=" << size << " rank=" << rank << " " << name_of(dtype) << " " << name_of(op)
      << " count=" << count;
  return out.str();
}

// Exact comparison, reporting the first differing element only.
void expect_bytes(const Bytes& got, const Bytes& want, DType dtype, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  if (got == want) return;
  const std::size_t esize = size_of(dtype);
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < got.size() / esize; ++i) {
    if (std::memcmp(got.data() + i * esize, want.data() + i * esize, esize) != 0) {
      if (wrong++ == 0) first = i;
    }
  }
  std::ostringstream bytes;
  for (std::size_t b = 0; b < esize; ++b) {
    bytes << std::hex << int(got[first * esize + b]) << "/" << int(want[first * esize + b]) << " ";
  }
  ADD_FAILURE() << what << ": " << wrong << " wrong elements, first at " << first
                << " (got/want bytes " << bytes.str() << ")";
}

// --- one case of each algorithm ------------------------------------------------------------

using AllReduceFn = void (*)(coll::CollectiveCall&, void*, std::size_t, DType, ReduceOp);
struct AllReduceAlgorithm {
  const char* name;
  AllReduceFn run;
};
const AllReduceAlgorithm kAllReduces[] = {
    {"ring", [](coll::CollectiveCall& call, void* data, std::size_t count, DType dtype,
                ReduceOp op) { coll::ring_all_reduce(call, data, data, count, dtype, op); }},
    {"recursive_doubling", coll::recursive_doubling_all_reduce},
    {"rabenseifner", coll::rabenseifner_all_reduce},
    {"naive", coll::naive_all_reduce},
    {"shm", [](coll::CollectiveCall& call, void* data, std::size_t count, DType dtype,
               ReduceOp op) { coll::shm_all_reduce(call, data, count, dtype, op); }},
};

struct Case {
  DType dtype;
  ReduceOp::Kind op;
  std::size_t count;
  int seed = 1;
  std::size_t segment_bytes = kSmallSegment;
};

void check_all_reduce(ProcessGroup& group, const AllReduceAlgorithm& algorithm, const Case& c,
                      ReduceOp op) {
  Bytes data = input_of(c.dtype, c.op, c.seed, group.rank(), c.count);
  auto call = make_call(group, algorithm.name, core::OpKind::kAllReduce, c.dtype, c.count, op.kind,
                        -1, c.segment_bytes);
  algorithm.run(call, data.data(), c.count, c.dtype, op);
  expect_bytes(data, expected_of(c.dtype, c.op, c.seed, group.size(), c.count), c.dtype,
               describe(std::string("all_reduce ") + algorithm.name, group.size(), group.rank(),
                        c.dtype, c.op, c.count));
}

void check_all_reduce(ProcessGroup& group, const AllReduceAlgorithm& algorithm, const Case& c) {
  check_all_reduce(group, algorithm, c, ReduceOp(c.op));
}

// The ring out of place: the output starts as garbage (nothing may be left of it), the input
// is only read.
void check_ring_all_reduce_out_of_place(ProcessGroup& group, const Case& c) {
  const Bytes input = input_of(c.dtype, c.op, c.seed, group.rank(), c.count);
  Bytes kept = input;
  Bytes output(input.size(), 0xEE);
  auto call = make_call(group, "ring", core::OpKind::kAllReduce, c.dtype, c.count, c.op, -1,
                        c.segment_bytes);
  coll::ring_all_reduce(call, kept.data(), output.data(), c.count, c.dtype, ReduceOp(c.op));
  const std::string what =
      describe("all_reduce ring out of place", group.size(), group.rank(), c.dtype, c.op, c.count);
  expect_bytes(output, expected_of(c.dtype, c.op, c.seed, group.size(), c.count), c.dtype, what);
  EXPECT_TRUE(kept == input) << what << ": input was modified";
}

// Every rank contributes counts[r] elements of output; input is the concatenation.
void check_reduce_scatter(ProcessGroup& group, const std::vector<std::size_t>& counts,
                          const Case& c) {
  std::size_t total = 0, first = 0;
  for (int r = 0; r < group.size(); ++r) {
    if (r == group.rank()) first = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  const std::size_t mine = counts[static_cast<std::size_t>(group.rank())];
  const Bytes input = input_of(c.dtype, c.op, c.seed, group.rank(), total);
  using Run = void (*)(coll::CollectiveCall&, const void*, void*, std::span<const std::size_t>,
                       DType, ReduceOp);
  const std::pair<const char*, Run> algorithms[] = {
      {"ring_reduce_scatter", coll::ring_reduce_scatter},
      {"recursive_halving_reduce_scatter", coll::recursive_halving_reduce_scatter},
      {"shm_reduce_scatter", coll::shm_reduce_scatter}};
  const Bytes expected = expected_of(c.dtype, c.op, c.seed, group.size(), mine, first);
  for (const auto& [name, run] : algorithms) {
    Bytes kept = input;
    Bytes output(mine * size_of(c.dtype), 0xEE);
    // The signature's count must agree on every rank, and per-rank counts may differ: the total.
    auto call = make_call(group, name, core::OpKind::kReduceScatter, c.dtype, total, c.op, -1,
                          c.segment_bytes);
    run(call, kept.data(), output.data(), counts, c.dtype, ReduceOp(c.op));
    const std::string what =
        describe(std::string(name), group.size(), group.rank(), c.dtype, c.op, total);
    expect_bytes(output, expected, c.dtype, what);
    EXPECT_TRUE(kept == input) << what << ": input was modified";
    // In place: the output is this rank's own block of the input.
    Bytes buffer = input;
    auto in_place = make_call(group, name, core::OpKind::kReduceScatter, c.dtype, total, c.op, -1,
                              c.segment_bytes);
    uint8_t* own_block = buffer.data() + first * size_of(c.dtype);
    run(in_place, buffer.data(), own_block, counts, c.dtype, ReduceOp(c.op));
    Bytes result(own_block, own_block + mine * size_of(c.dtype));
    expect_bytes(result, expected, c.dtype, what + " in place");
  }
}

// The API's reduce_scatter from one input: `c.count` elements to every rank, no size list.
void check_even_reduce_scatter(ProcessGroup& group, const Case& c) {
  const std::size_t p = static_cast<std::size_t>(group.size());
  const Bytes input = input_of(c.dtype, c.op, c.seed, group.rank(), c.count * p);
  Bytes kept = input;
  Bytes output(c.count * size_of(c.dtype), 0xEE);
  auto call = make_call(group, "shm_even_reduce_scatter", core::OpKind::kReduceScatter, c.dtype,
                        c.count * p, c.op, -1, c.segment_bytes);
  coll::shm_even_reduce_scatter(call, kept.data(), output.data(), c.count, c.dtype, ReduceOp(c.op));
  const std::string what =
      describe("shm_even_reduce_scatter", group.size(), group.rank(), c.dtype, c.op, c.count * p);
  expect_bytes(output,
               expected_of(c.dtype, c.op, c.seed, group.size(), c.count, c.count * group.rank()),
               c.dtype, what);
  EXPECT_TRUE(kept == input) << what << ": input was modified";
}

// Near-equal split of `count`, as torch's reduce_scatter_tensor would give.
std::vector<std::size_t> even_counts(std::size_t count, int size) {
  std::vector<std::size_t> counts;
  for (int r = 0; r < size; ++r)
    counts.push_back(count / size + (static_cast<std::size_t>(r) < count % size));
  return counts;
}

void check_reduce(ProcessGroup& group, int root, const Case& c) {
  const Bytes input = input_of(c.dtype, c.op, c.seed, group.rank(), c.count);
  for (const char* name : {"binomial_reduce", "shm_reduce"}) {
    Bytes data = input;
    auto call = make_call(group, name, core::OpKind::kReduce, c.dtype, c.count, c.op, root,
                          c.segment_bytes);
    if (name[0] == 'b') {
      coll::binomial_reduce(call, data.data(), c.count, c.dtype, ReduceOp(c.op), root);
    } else {
      coll::shm_all_reduce(call, data.data(), c.count, c.dtype, ReduceOp(c.op), root);
    }
    const std::string what = describe(std::string(name) + " root=" + std::to_string(root),
                                      group.size(), group.rank(), c.dtype, c.op, c.count);
    if (group.rank() == root) {
      expect_bytes(data, expected_of(c.dtype, c.op, c.seed, group.size(), c.count), c.dtype, what);
    } else {
      EXPECT_TRUE(data == input) << what << ": a non-root's data was modified";
    }
  }
}

void check_scan(ProcessGroup& group, bool exclusive, bool in_place, const Case& c) {
  const int rank = group.rank();
  const Bytes input = input_of(c.dtype, c.op, c.seed, rank, c.count);
  const Bytes sentinel(input.size(), 0xA5);
  Bytes in = input;
  Bytes out = in_place ? input : sentinel;
  auto call = make_call(group, exclusive ? "exscan" : "scan",
                        exclusive ? core::OpKind::kExscan : core::OpKind::kScan, c.dtype, c.count,
                        c.op, -1, c.segment_bytes);
  const void* source = in_place ? out.data() : in.data();
  if (exclusive) {
    coll::exclusive_scan(call, source, out.data(), c.count, c.dtype, ReduceOp(c.op));
  } else {
    coll::inclusive_scan(call, source, out.data(), c.count, c.dtype, ReduceOp(c.op));
  }
  const std::string what =
      describe(std::string(exclusive ? "exscan" : "scan") + (in_place ? " in place" : ""),
               group.size(), rank, c.dtype, c.op, c.count);
  if (exclusive && rank == 0) {
    EXPECT_TRUE(out == (in_place ? input : sentinel)) << what << ": rank 0's output was written";
  } else {
    const int ranks = exclusive ? rank : rank + 1;
    expect_bytes(out, expected_of(c.dtype, c.op, c.seed, ranks, c.count), c.dtype, what);
  }
  if (!in_place) {
    EXPECT_TRUE(in == input) << what << ": input was modified";
  }
}

// Every algorithm on one case (reduce at root size-1, scans both ways).
void check_every_algorithm(ProcessGroup& group, const Case& c) {
  for (const auto& algorithm : kAllReduces) check_all_reduce(group, algorithm, c);
  check_ring_all_reduce_out_of_place(group, c);
  check_reduce_scatter(group, even_counts(c.count, group.size()), c);
  check_even_reduce_scatter(group, c);
  check_reduce(group, group.size() - 1, c);
  check_scan(group, false, false, c);
  check_scan(group, true, false, c);
}

// --- the matrix ------------------------------------------------------------------------------

// Every dtype x op at a few counts, world sizes 3 and 4.
TEST(ReducingAlgorithms, EveryDTypeAndOp) {
  for (int size : {3, 4}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      int seed = 0;
      for (DType dtype : testing::all_dtypes()) {
        for (ReduceOp::Kind op : ops_for(dtype)) {
          for (std::size_t count :
               {std::size_t{1}, static_cast<std::size_t>(group.size() + 1), std::size_t{1023}}) {
            check_every_algorithm(group, {dtype, op, count, ++seed});
          }
        }
      }
    });
  }
}

// Every world size x count, at float32 and int32 SUM and bfloat16 MAX.
TEST(ReducingAlgorithms, EveryWorldSizeAndCount) {
  for (int size : {1, 2, 3, 4, 5, 7, 8}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      const std::size_t p = static_cast<std::size_t>(group.size());
      int seed = 100;
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, p - 1, p + 1, std::size_t{1023}}) {
        check_every_algorithm(group, {DType::kFloat32, ReduceOp::kSum, count, ++seed});
        check_every_algorithm(group, {DType::kInt32, ReduceOp::kSum, count, ++seed});
        check_every_algorithm(group, {DType::kBFloat16, ReduceOp::kMax, count, ++seed});
      }
    });
  }
}

// Rabenseifner off powers of two (the first p - q ranks fold in and out, q the largest power of
// two below p, and the data splits into q blocks): every dtype and op, at counts of zero, below
// the world size and below q (empty blocks), around both, and not divisible by either.
TEST(ReducingAlgorithms, RabenseifnerOffPowersOfTwo) {
  const AllReduceAlgorithm& rabenseifner = kAllReduces[2];
  ASSERT_STREQ(rabenseifner.name, "rabenseifner");
  for (int size : {3, 5, 6, 7}) {
    run_ranks_leaving_in_turn(size, [&](ProcessGroup& group) {
      const std::size_t p = static_cast<std::size_t>(group.size());
      const std::size_t q = std::bit_floor(p);
      int seed = 600;
      for (DType dtype : testing::all_dtypes()) {
        for (ReduceOp::Kind op : ops_for(dtype)) {
          for (std::size_t count : {std::size_t{0}, std::size_t{1}, q - 1, p - 1, p, p + 1,
                                    2 * p + 3, std::size_t{1023}}) {
            check_all_reduce(group, rabenseifner, {dtype, op, count, ++seed});
          }
        }
      }
    });
  }
}

// 2^20 + 3 elements at the default 1 MiB segments: several segments per block, odd blocks.
TEST(ReducingAlgorithms, LargeCount) {
  constexpr std::size_t kCount = (1u << 20) + 3;
  for (int size : {3, 4}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      Case c{DType::kFloat32, ReduceOp::kSum, kCount, 7, 1u << 20};
      for (const auto& algorithm : kAllReduces) check_all_reduce(group, algorithm, c);
      check_reduce_scatter(group, even_counts(kCount, group.size()), c);
      check_reduce(group, 1, c);
      Case ints{DType::kInt32, ReduceOp::kSum, kCount, 8, 256u << 10};
      check_all_reduce(group, kAllReduces[0], ints);
      check_reduce(group, 0, ints);
      check_scan(group, false, false, {DType::kInt64, ReduceOp::kMax, kCount / 4, 9});
    });
  }
}

// Same-host all_reduce and reduce of shares several times the 4 KiB blocks in which a member
// reduces its share into its own buffer too, with a remainder, in every element size (a
// non-root's buffer must stay as it was).
TEST(ReducingAlgorithms, SharesLargerThanABlock) {
  const AllReduceAlgorithm& shm = kAllReduces[4];
  ASSERT_STREQ(shm.name, "shm");
  for (int size : {2, 3}) {
    run_ranks_leaving_in_turn(size, [&](ProcessGroup& group) {
      int seed = 150;
      for (DType dtype : {DType::kInt8, DType::kFloat16, DType::kFloat32, DType::kFloat64}) {
        const std::size_t count = 50'001 + static_cast<std::size_t>(group.size());
        for (std::size_t segment : {std::size_t{64} << 10, std::size_t{1} << 20}) {
          Case c{dtype, ReduceOp::kSum, count, ++seed, segment};
          check_all_reduce(group, shm, c);
          check_reduce(group, 0, c);
          check_reduce(group, group.size() - 1, c);
        }
      }
    });
  }
}

// Segments far smaller than a block, of sizes that are not a multiple of the element, and
// smaller than one element (segments are then one element).
TEST(ReducingAlgorithms, ManySegments) {
  for (int size : {2, 3, 5, 8}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      int seed = 200;
      for (std::size_t segment : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
        for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kInt8}) {
          const std::size_t count =
              segment == 1 ? 37 : 1000 + static_cast<std::size_t>(group.size());
          Case c{dtype, ReduceOp::kSum, count, ++seed, segment};
          for (const auto& algorithm : kAllReduces) check_all_reduce(group, algorithm, c);
          check_reduce_scatter(group, even_counts(count, group.size()), c);
          check_reduce(group, group.size() / 2, c);
        }
      }
    });
  }
}

TEST(ReducingAlgorithms, ReduceScatterWithUnevenAndZeroCounts) {
  for (int size : {1, 2, 3, 4, 5, 7, 8}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      const auto p = static_cast<std::size_t>(group.size());
      std::vector<std::vector<std::size_t>> layouts = {
          std::vector<std::size_t>(p, 0),  // nothing at all
      };
      std::vector<std::size_t> ragged, one_rank(p, 0), first_rank(p, 0), zero_first;
      for (std::size_t r = 0; r < p; ++r) ragged.push_back(r % 3 == 1 ? 0 : 17 * r + 5);
      one_rank[p - 1] = 300;  // everything on the last rank
      first_rank[0] = 300;    // everything on the first (a halving keeps all of it, then none)
      for (std::size_t r = 0; r < p; ++r) zero_first.push_back(r == 0 ? 0 : r);
      layouts.push_back(ragged);
      layouts.push_back(one_rank);
      layouts.push_back(first_rank);
      layouts.push_back(zero_first);
      int seed = 300;
      for (const auto& counts : layouts) {
        for (DType dtype : {DType::kFloat32, DType::kInt16, DType::kFloat16}) {
          check_reduce_scatter(group, counts, {dtype, ReduceOp::kSum, 0, ++seed, kSmallSegment});
          check_reduce_scatter(group, counts, {dtype, ReduceOp::kMin, 0, ++seed, 1u << 20});
        }
      }
    });
  }
}

TEST(ReducingAlgorithms, ReduceAtEveryRoot) {
  for (int size : {1, 2, 3, 5, 7, 8}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      int seed = 400;
      for (int root = 0; root < group.size(); ++root) {
        check_reduce(group, root, {DType::kFloat32, ReduceOp::kSum, 1023, ++seed});
        check_reduce(group, root, {DType::kBFloat16, ReduceOp::kSum, 5, ++seed});
        check_reduce(group, root, {DType::kUInt8, ReduceOp::kBxor, 200, ++seed, 1u << 20});
        check_reduce(group, root, {DType::kInt8, ReduceOp::kProduct, 0, ++seed});
      }
    });
  }
}

TEST(ReducingAlgorithms, ScanAndExscan) {
  for (int size : {1, 2, 3, 4, 5, 7, 8}) {
    run_ranks_leaving_in_turn(size, [](ProcessGroup& group) {
      int seed = 500;
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1023}}) {
        for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool}) {
          for (ReduceOp::Kind op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProduct}) {
            for (bool exclusive : {false, true}) {
              for (bool in_place : {false, true}) {
                check_scan(group, exclusive, in_place, {dtype, op, count, ++seed});
              }
            }
          }
        }
      }
    });
  }
}

// AVG and PREMUL_SUM reduce as SUM inside the algorithms (the caller divides or pre-scales):
// in particular the naive algorithm's reduce_many must not apply the factor again.
TEST(ReducingAlgorithms, AvgAndPremulSumReduceAsSum) {
  run_ranks_leaving_in_turn(5, [](ProcessGroup& group) {
    int seed = 600;
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (ReduceOp op : {ReduceOp(ReduceOp::kAvg), ReduceOp::premul_sum(3.0)}) {
        Case c{dtype, ReduceOp::kSum, 101, ++seed};
        for (const auto& algorithm : kAllReduces) check_all_reduce(group, algorithm, c, op);
      }
    }
  });
}

// Calls of one algorithm back to back with different segment sizes and counts do not mix
// their messages up (each call has its own sequence number).
TEST(ReducingAlgorithms, BackToBackCalls) {
  run_ranks_leaving_in_turn(4, [](ProcessGroup& group) {
    for (int i = 0; i < 50; ++i) {
      Case c{DType::kInt32, ReduceOp::kSum, static_cast<std::size_t>(i * 13 % 97), i,
             static_cast<std::size_t>(4 + i % 5 * 4)};
      check_all_reduce(group, kAllReduces[static_cast<std::size_t>(i) % std::size(kAllReduces)], c);
    }
  });
}

}  // namespace
}  // namespace weft

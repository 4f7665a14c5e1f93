// One measured cell: an op at one size, dtype, reduce op and root, out of place or in place;
// and the buffers and weft views its calls use.
//
// Contract: CaseBuffers owns page-aligned send and receive buffers (zeroed, so that they are
// paged in before timing) and builds every view once, so the timed loop allocates nothing.
// Layout, at rank `me`, block B, count C = n x B for the block ops:
//   all_reduce, broadcast, reduce   in place: data = recv[0, C); out of place: send[0, C) ->
//                recv[0, C) (non-roots of reduce receive into recv too, as scratch)
//   all_gather   out of place: send[0, B) -> recv[0, C); in place: input = recv[me B, +B)
//   gather       like all_gather, receive side at the root only
//   reduce_scatter  out of place: send[0, C) -> recv[0, B); in place: output = recv[me B, +B)
//   all_to_all   send[0, C) -> recv[0, C)                                   (out of place only)
//   scatter      root's blocks send[r B, +B) -> recv[0, B); in place the root's output is
//                its own block send[root B, +B)
//   sendrecv     send[0, C) to rank+1, recv[0, C) from rank-1                (out of place only)
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "bench_op.h"
#include "sizes.h"
#include "weft/buffer.h"
#include "weft/dtype.h"
#include "weft/reduce_op.h"

namespace weft_bench {

struct BenchCase {
  BenchOp op;
  weft::DType dtype;
  weft::ReduceOp::Kind redop;  // reducing ops only
  double premul_factor;
  int root;
  bool in_place;
  Shape shape;

  weft::ReduceOp reduce_op() const {
    return redop == weft::ReduceOp::kPremulSum ? weft::ReduceOp::premul_sum(premul_factor)
                                               : weft::ReduceOp(redop);
  }
};

class CaseBuffers {
 public:
  CaseBuffers(const BenchCase& c, int rank, int world_size);
  CaseBuffers(const CaseBuffers&) = delete;
  CaseBuffers& operator=(const CaseBuffers&) = delete;

  void* send() { return send_.get(); }
  void* recv() { return recv_.get(); }
  std::size_t bytes() const { return bytes_; }
  // Zeroes both buffers: the timed loop runs on zeros, as the anchors do, so that in-place
  // reductions cannot overflow.
  void zero();

  // The views the calls take (see the layout above); unused ones stay empty.
  weft::BufferView data;
  weft::ConstBufferView input;
  weft::BufferView output;
  std::vector<weft::BufferView> outputs;      // gather, at the root
  std::vector<weft::ConstBufferView> inputs;  // scatter, at the root

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> send_;
  std::unique_ptr<void, FreeDeleter> recv_;
  std::size_t bytes_ = 0;
};

}  // namespace weft_bench

#include "bench_case.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace weft_bench {
namespace {

constexpr std::size_t kAlignment = 4096;

void* allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? kAlignment : rounded);
  return p;
}

}  // namespace

void CaseBuffers::FreeDeleter::operator()(void* p) const { std::free(p); }

CaseBuffers::CaseBuffers(const BenchCase& c, int rank, int world_size) : bytes_(c.shape.bytes) {
  send_.reset(allocate(bytes_));
  recv_.reset(allocate(bytes_));
  const weft::DType t = c.dtype;
  const std::size_t e = weft::size_of(t);
  const std::size_t count = c.shape.count;
  const std::size_t block = c.shape.block;
  auto* s = static_cast<unsigned char*>(send_.get());
  auto* r = static_cast<unsigned char*>(recv_.get());
  auto block_of = [&](unsigned char* base, int k) {
    return base + static_cast<std::size_t>(k) * block * e;
  };
  const bool root = rank == c.root;

  switch (c.op) {
    case BenchOp::kAllReduce:
    case BenchOp::kBroadcast:
    case BenchOp::kReduce:
      data = weft::BufferView(r, count, t);
      input = weft::ConstBufferView(c.in_place ? r : s, count, t);
      output = data;
      break;
    case BenchOp::kAllGather:
      output = weft::BufferView(r, count, t);
      input = c.in_place ? weft::ConstBufferView(block_of(r, rank), block, t)
                         : weft::ConstBufferView(s, block, t);
      break;
    case BenchOp::kGather:
      input = c.in_place && root ? weft::ConstBufferView(block_of(r, rank), block, t)
                                 : weft::ConstBufferView(s, block, t);
      if (root) {
        for (int k = 0; k < world_size; ++k) outputs.emplace_back(block_of(r, k), block, t);
      }
      break;
    case BenchOp::kReduceScatter:
      if (c.in_place) {
        input = weft::ConstBufferView(r, count, t);
        output = weft::BufferView(block_of(r, rank), block, t);
      } else {
        input = weft::ConstBufferView(s, count, t);
        output = weft::BufferView(r, block, t);
      }
      break;
    case BenchOp::kScatter:
      if (root) {
        for (int k = 0; k < world_size; ++k) inputs.emplace_back(block_of(s, k), block, t);
      }
      output = c.in_place && root ? weft::BufferView(block_of(s, rank), block, t)
                                  : weft::BufferView(r, block, t);
      break;
    case BenchOp::kAllToAll:
    case BenchOp::kSendRecv:
      input = weft::ConstBufferView(s, count, t);
      output = weft::BufferView(r, count, t);
      break;
    case BenchOp::kBarrier:
      break;
  }
}

void CaseBuffers::zero() {
  std::memset(send_.get(), 0, bytes_);
  std::memset(recv_.get(), 0, bytes_);
}

}  // namespace weft_bench

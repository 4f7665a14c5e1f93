#include "collective_call.h"

#include <vector>

namespace weft_bench {
namespace {

// The Works of one batch_isend_irecv, waited for as one.
class WorkSet final : public weft::Work {
 public:
  explicit WorkSet(std::vector<std::shared_ptr<weft::Work>> works) : works_(std::move(works)) {}
  void wait(std::optional<std::chrono::milliseconds> timeout) override {
    for (auto& w : works_) w->wait(timeout);
  }
  bool is_completed() const override {
    for (const auto& w : works_) {
      if (!w->is_completed()) return false;
    }
    return true;
  }
  bool is_success() const override {
    for (const auto& w : works_) {
      if (!w->is_success()) return false;
    }
    return true;
  }
  std::exception_ptr exception() const override {
    for (const auto& w : works_) {
      if (auto e = w->exception()) return e;
    }
    return nullptr;
  }
  int source_rank() const override { return -1; }

 private:
  std::vector<std::shared_ptr<weft::Work>> works_;
};

constexpr int kSendRecvTag = 0;

}  // namespace

std::shared_ptr<weft::Work> launch(weft::ProcessGroup& g, const BenchCase& c, CaseBuffers& b,
                                   const weft::CollectiveOptions& o, bool async) {
  switch (c.op) {
    case BenchOp::kAllReduce:
      if (c.in_place) {
        if (async) return g.iall_reduce(b.data, c.reduce_op(), o);
        g.all_reduce(b.data, c.reduce_op(), o);
      } else {
        if (async) return g.iall_reduce(b.input, b.output, c.reduce_op(), o);
        g.all_reduce(b.input, b.output, c.reduce_op(), o);
      }
      return nullptr;
    case BenchOp::kBroadcast:
      if (c.in_place) {
        if (async) return g.ibroadcast(b.data, c.root, o);
        g.broadcast(b.data, c.root, o);
      } else {
        if (async) return g.ibroadcast(b.input, b.output, c.root, o);
        g.broadcast(b.input, b.output, c.root, o);
      }
      return nullptr;
    case BenchOp::kReduce:
      if (c.in_place) {
        if (async) return g.ireduce(b.data, c.root, c.reduce_op(), o);
        g.reduce(b.data, c.root, c.reduce_op(), o);
      } else {
        if (async) return g.ireduce(b.input, b.output, c.root, c.reduce_op(), o);
        g.reduce(b.input, b.output, c.root, c.reduce_op(), o);
      }
      return nullptr;
    case BenchOp::kAllGather:
      if (async) return g.iall_gather(b.input, b.output, o);
      g.all_gather(b.input, b.output, o);
      return nullptr;
    case BenchOp::kGather:
      if (async) return g.igather(b.input, b.outputs, c.root, o);
      g.gather(b.input, b.outputs, c.root, o);
      return nullptr;
    case BenchOp::kReduceScatter:
      if (async) return g.ireduce_scatter(b.input, b.output, c.reduce_op(), o);
      g.reduce_scatter(b.input, b.output, c.reduce_op(), o);
      return nullptr;
    case BenchOp::kScatter:
      if (async) return g.iscatter(b.inputs, b.output, c.root, o);
      g.scatter(b.inputs, b.output, c.root, o);
      return nullptr;
    case BenchOp::kAllToAll:
      if (async) return g.iall_to_all(b.input, b.output, {}, {}, o);
      g.all_to_all(b.input, b.output, {}, {}, o);
      return nullptr;
    case BenchOp::kBarrier:
      if (async) return g.ibarrier(o);
      g.barrier(o);
      return nullptr;
    case BenchOp::kSendRecv: {
      // A ring, as nccl-tests' sendrecv: send to the next rank, receive from the previous.
      const int n = g.size();
      const int next = (g.rank() + 1) % n;
      const int prev = (g.rank() + n - 1) % n;
      auto works = g.batch_isend_irecv({weft::P2POp::recv(b.output, prev, kSendRecvTag),
                                        weft::P2POp::send(b.input, next, kSendRecvTag)});
      if (async) return std::make_shared<WorkSet>(std::move(works));
      for (auto& w : works) w->wait();
      return nullptr;
    }
  }
  return nullptr;
}

}  // namespace weft_bench

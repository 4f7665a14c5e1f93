// One class per kind of operation (soak_ops.h). Stream numbers name a rank's buffers at a
// step: 0 its input, 1 + r its block for group rank r, kSizeStream the draw of its uneven sizes.
#include "soak_ops.h"

#include <algorithm>
#include <functional>

#include "soak_values.h"
#include "weft/p2p_op.h"

namespace weft::soak {
namespace {

constexpr uint64_t kSizeStream = 1u << 20;
constexpr unsigned char kUntouched = 0xA5;  // what output buffers hold before the op

using Works = std::vector<std::shared_ptr<Work>>;

BufferView view(Bytes& b, DType dtype) { return {b.data(), b.size() / width_of(dtype), dtype}; }
ConstBufferView cview(const Bytes& b, DType dtype) {
  return {b.data(), b.size() / width_of(dtype), dtype};
}

std::optional<std::string> compare(const std::string& what, const Expected& expected,
                                   const Bytes& got) {
  const auto diff = first_difference(expected, got.data(), got.size() / width_of(expected.dtype));
  if (!diff) return std::nullopt;
  return what + " element " + std::to_string(diff->index) + ": expected " + diff->expected +
         ", got " + diff->got;
}

ValueRange range_for(ReduceOp op) {
  return op.kind == ReduceOp::kProduct ? ValueRange::kFactors : ValueRange::kWide;
}

Bytes concat(const std::vector<Bytes>& parts) {
  Bytes all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Holds what every op has: the context, its dtype, and Works for blocking-or-async calls.
class OpBase : public SoakOp {
 public:
  explicit OpBase(const OpContext& c) : c_(c), step_(*c.step), dtype_(step_.dtype) {}
  uint64_t bytes() const override { return bytes_; }

 protected:
  Bytes values(int rank, uint64_t stream, std::size_t count,
               ValueRange range = ValueRange::kWide) const {
    return make_values(dtype_, range, c_.key(rank, stream), count);
  }
  Bytes untouched(std::size_t count) const { return make_filled(dtype_, count, kUntouched); }
  // Each member's count in the uneven forms: the step's count plus 0 to 3.
  std::size_t uneven_count(int rank) const {
    return step_.count + element_bits(c_.key(rank, kSizeStream), 0) % 4;
  }
  // The reduction over `contributors` of input_of(rank).
  Expected reduction(const std::vector<int>& contributors, std::size_t count,
                     const std::function<Bytes(int)>& input_of) const {
    ReferenceReduction reference(dtype_, step_.reduce, count);
    for (int r : contributors) reference.add(input_of(r));
    return reference.finish();
  }
  std::vector<int> everyone() const {
    std::vector<int> all(static_cast<std::size_t>(c_.size()));
    for (int r = 0; r < c_.size(); ++r) all[static_cast<std::size_t>(r)] = r;
    return all;
  }
  static Works one(std::shared_ptr<Work> work) { return work ? Works{std::move(work)} : Works{}; }

  OpContext c_;
  Step step_;
  DType dtype_;
  uint64_t bytes_ = 0;
};

class AllReduceOp : public OpBase {
 public:
  explicit AllReduceOp(const OpContext& c) : OpBase(c) {
    const auto range = range_for(step_.reduce);
    input_ = values(c.me, 0, step_.count, range);
    pristine_ = input_;
    output_ = step_.in_place ? input_ : untouched(step_.count);
    expected_ =
        reduction(everyone(), step_.count, [&](int r) { return values(r, 0, step_.count, range); });
    bytes_ = input_.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    if (step_.in_place) {
      if (async) return one(g.iall_reduce(view(output_, dtype_), step_.reduce));
      g.all_reduce(view(output_, dtype_), step_.reduce);
    } else {
      if (async)
        return one(g.iall_reduce(cview(input_, dtype_), view(output_, dtype_), step_.reduce));
      g.all_reduce(cview(input_, dtype_), view(output_, dtype_), step_.reduce);
    }
    return {};
  }
  std::optional<std::string> check() const override {
    if (auto wrong = compare("result", expected_, output_)) return wrong;
    return compare("input (only read)", exact_bytes(dtype_, pristine_), input_);
  }

 private:
  Bytes input_, pristine_, output_;
  Expected expected_;
};

class BroadcastOp : public OpBase {
 public:
  explicit BroadcastOp(const OpContext& c) : OpBase(c), root_(step_.root_in(c.size())) {
    const Bytes sent = values(root_, 0, step_.count);
    const bool root = c.me == root_;
    if (step_.in_place) {
      output_ = root ? sent : untouched(step_.count);
    } else {
      input_ = root ? sent : (step_.variant ? Bytes{} : untouched(step_.count));
      output_ = untouched(step_.count);
    }
    expected_ = exact_bytes(dtype_, sent);
    bytes_ = sent.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    if (step_.in_place) {
      if (async) return one(g.ibroadcast(view(output_, dtype_), root_));
      g.broadcast(view(output_, dtype_), root_);
    } else {
      if (async) return one(g.ibroadcast(cview(input_, dtype_), view(output_, dtype_), root_));
      g.broadcast(cview(input_, dtype_), view(output_, dtype_), root_);
    }
    return {};
  }
  std::optional<std::string> check() const override {
    return compare("root " + std::to_string(root_) + "'s data", expected_, output_);
  }

 private:
  int root_;
  Bytes input_, output_;
  Expected expected_;
};

class ReduceOpRun : public OpBase {
 public:
  explicit ReduceOpRun(const OpContext& c) : OpBase(c), root_(step_.root_in(c.size())) {
    const auto range = range_for(step_.reduce);
    input_ = values(c.me, 0, step_.count, range);
    const bool root = c.me == root_;
    if (root) {
      expected_ = reduction(everyone(), step_.count,
                            [&](int r) { return values(r, 0, step_.count, range); });
    } else if (step_.in_place) {
      expected_ = exact_bytes(dtype_, input_);  // left unchanged off the root
    }
    if (!step_.in_place) {
      // Off the root, output is scratch of the input's size or empty.
      output_ = (root || !step_.variant) ? untouched(step_.count) : Bytes{};
    }
    bytes_ = input_.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    if (step_.in_place) {
      if (async) return one(g.ireduce(view(input_, dtype_), root_, step_.reduce));
      g.reduce(view(input_, dtype_), root_, step_.reduce);
    } else {
      if (async) {
        return one(g.ireduce(cview(input_, dtype_), view(output_, dtype_), root_, step_.reduce));
      }
      g.reduce(cview(input_, dtype_), view(output_, dtype_), root_, step_.reduce);
    }
    return {};
  }
  std::optional<std::string> check() const override {
    if (c_.me == root_)
      return compare("root's result", expected_, step_.in_place ? input_ : output_);
    if (step_.in_place) return compare("a non-root's data (must stay)", expected_, input_);
    return std::nullopt;
  }

 private:
  int root_;
  Bytes input_, output_;
  Expected expected_;
};

class AllGatherOp : public OpBase {
 public:
  explicit AllGatherOp(const OpContext& c) : OpBase(c) {
    const int n = c.size();
    if (step_.uneven) {
      input_ = values(c.me, 0, uneven_count(c.me));
      for (int r = 0; r < n; ++r) {
        outputs_.push_back(untouched(uneven_count(r)));
        expected_.push_back(exact_bytes(dtype_, values(r, 0, uneven_count(r))));
      }
    } else {
      std::vector<Bytes> parts;
      for (int r = 0; r < n; ++r) parts.push_back(values(r, 0, step_.count));
      outputs_.push_back(untouched(step_.count * static_cast<std::size_t>(n)));
      expected_.push_back(exact_bytes(dtype_, concat(parts)));
      input_ = parts[static_cast<std::size_t>(c.me)];
      if (step_.in_place) {
        std::copy(input_.begin(), input_.end(),
                  outputs_[0].begin() + static_cast<std::ptrdiff_t>(slice_offset()));
      }
    }
    for (const auto& o : outputs_) bytes_ += o.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    if (step_.uneven) {
      std::vector<BufferView> views;
      for (auto& o : outputs_) views.push_back(view(o, dtype_));
      if (async) return one(g.iall_gather(cview(input_, dtype_), views));
      g.all_gather(cview(input_, dtype_), views);
      return {};
    }
    // In place: the input is this rank's own slice of the output.
    const ConstBufferView input =
        step_.in_place ? ConstBufferView(outputs_[0].data() + slice_offset(), step_.count, dtype_)
                       : cview(input_, dtype_);
    if (async) return one(g.iall_gather(input, view(outputs_[0], dtype_)));
    g.all_gather(input, view(outputs_[0], dtype_));
    return {};
  }
  std::optional<std::string> check() const override {
    for (std::size_t r = 0; r < outputs_.size(); ++r) {
      if (auto wrong = compare("output[" + std::to_string(r) + "]", expected_[r], outputs_[r])) {
        return wrong;
      }
    }
    return std::nullopt;
  }

 private:
  std::size_t slice_offset() const {
    return static_cast<std::size_t>(c_.me) * step_.count * width_of(dtype_);
  }
  Bytes input_;
  std::vector<Bytes> outputs_;
  std::vector<Expected> expected_;
};

class GatherOp : public OpBase {
 public:
  explicit GatherOp(const OpContext& c) : OpBase(c), root_(step_.root_in(c.size())) {
    input_ = values(c.me, 0, step_.count);
    if (c.me == root_) {
      for (int r = 0; r < c.size(); ++r) {
        outputs_.push_back(untouched(step_.count));
        expected_.push_back(exact_bytes(dtype_, values(r, 0, step_.count)));
      }
    }
    bytes_ = input_.size() * (c.me == root_ ? static_cast<std::size_t>(c.size()) : 1);
  }
  Works issue(ProcessGroup& g, bool async) override {
    std::vector<BufferView> views;
    for (auto& o : outputs_) views.push_back(view(o, dtype_));
    if (async) return one(g.igather(cview(input_, dtype_), views, root_));
    g.gather(cview(input_, dtype_), views, root_);
    return {};
  }
  std::optional<std::string> check() const override {
    for (std::size_t r = 0; r < outputs_.size(); ++r) {
      if (auto wrong =
              compare("root's output[" + std::to_string(r) + "]", expected_[r], outputs_[r])) {
        return wrong;
      }
    }
    return std::nullopt;
  }

 private:
  int root_;
  Bytes input_;
  std::vector<Bytes> outputs_;
  std::vector<Expected> expected_;
};

class ScatterOp : public OpBase {
 public:
  explicit ScatterOp(const OpContext& c) : OpBase(c), root_(step_.root_in(c.size())) {
    if (c.me == root_) {
      for (int r = 0; r < c.size(); ++r) inputs_.push_back(values(root_, 1 + r, step_.count));
    }
    output_ = untouched(step_.count);
    expected_ = exact_bytes(dtype_, values(root_, 1 + c.me, step_.count));
    bytes_ = output_.size() * (c.me == root_ ? static_cast<std::size_t>(c.size()) : 1);
  }
  Works issue(ProcessGroup& g, bool async) override {
    std::vector<ConstBufferView> views;
    for (const auto& in : inputs_) views.push_back(cview(in, dtype_));
    if (async) return one(g.iscatter(views, view(output_, dtype_), root_));
    g.scatter(views, view(output_, dtype_), root_);
    return {};
  }
  std::optional<std::string> check() const override {
    return compare("block from root " + std::to_string(root_), expected_, output_);
  }

 private:
  int root_;
  std::vector<Bytes> inputs_;
  Bytes output_;
  Expected expected_;
};

class ReduceScatterOp : public OpBase {
 public:
  explicit ReduceScatterOp(const OpContext& c) : OpBase(c) {
    const auto range = range_for(step_.reduce);
    const int n = c.size();
    const int me = c.me;
    if (step_.uneven) {
      for (int r = 0; r < n; ++r) inputs_.push_back(values(me, 1 + r, uneven_count(r), range));
      output_ = untouched(uneven_count(me));
      expected_ = reduction(everyone(), uneven_count(me),
                            [&](int r) { return values(r, 1 + me, uneven_count(me), range); });
    } else {
      const std::size_t count = step_.count;
      const std::size_t width = width_of(dtype_);
      inputs_.push_back(values(me, 0, count * static_cast<std::size_t>(n), range));
      output_ = untouched(count);
      expected_ = reduction(everyone(), count, [&](int r) {
        const Bytes all = values(r, 0, count * static_cast<std::size_t>(n), range);
        const auto first =
            all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * count * width);
        return Bytes(first, first + static_cast<std::ptrdiff_t>(count * width));
      });
    }
    for (const auto& in : inputs_) bytes_ += in.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    if (step_.uneven) {
      std::vector<ConstBufferView> views;
      for (const auto& in : inputs_) views.push_back(cview(in, dtype_));
      if (async) return one(g.ireduce_scatter(views, view(output_, dtype_), step_.reduce));
      g.reduce_scatter(views, view(output_, dtype_), step_.reduce);
      return {};
    }
    if (async) {
      return one(g.ireduce_scatter(cview(inputs_[0], dtype_), view(output_, dtype_), step_.reduce));
    }
    g.reduce_scatter(cview(inputs_[0], dtype_), view(output_, dtype_), step_.reduce);
    return {};
  }
  std::optional<std::string> check() const override {
    return compare("my block", expected_, output_);
  }

 private:
  std::vector<Bytes> inputs_;
  Bytes output_;
  Expected expected_;
};

// Equal blocks, split sizes (uneven), or the list form with uneven sizes (uneven + variant).
class AllToAllOp : public OpBase {
 public:
  explicit AllToAllOp(const OpContext& c) : OpBase(c) {
    const int n = c.size();
    std::vector<Bytes> sent, received;
    for (int r = 0; r < n; ++r) {
      sent.push_back(values(c.me, 1 + r, split(c.me, r)));
      received.push_back(values(r, 1 + c.me, split(r, c.me)));
      input_splits_.push_back(split(c.me, r));
      output_splits_.push_back(split(r, c.me));
    }
    if (list_form()) {
      inputs_ = sent;
      for (const auto& b : received) outputs_.push_back(untouched(b.size() / width_of(dtype_)));
      for (auto& b : received) expected_.push_back(exact_bytes(dtype_, std::move(b)));
    } else {
      inputs_.push_back(concat(sent));
      const Bytes all = concat(received);
      outputs_.push_back(untouched(all.size() / width_of(dtype_)));
      expected_.push_back(exact_bytes(dtype_, all));
    }
    for (const auto& in : inputs_) bytes_ += in.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    if (list_form()) {
      std::vector<ConstBufferView> ins;
      std::vector<BufferView> outs;
      for (const auto& in : inputs_) ins.push_back(cview(in, dtype_));
      for (auto& out : outputs_) outs.push_back(view(out, dtype_));
      if (async) return one(g.iall_to_all(ins, outs));
      g.all_to_all(ins, outs);
      return {};
    }
    const auto in = cview(inputs_[0], dtype_);
    const auto out = view(outputs_[0], dtype_);
    const std::vector<std::size_t> none;
    const auto& in_splits = step_.uneven ? input_splits_ : none;
    const auto& out_splits = step_.uneven ? output_splits_ : none;
    if (async) return one(g.iall_to_all(in, out, in_splits, out_splits));
    g.all_to_all(in, out, in_splits, out_splits);
    return {};
  }
  std::optional<std::string> check() const override {
    for (std::size_t r = 0; r < outputs_.size(); ++r) {
      if (auto wrong = compare("output[" + std::to_string(r) + "]", expected_[r], outputs_[r])) {
        return wrong;
      }
    }
    return std::nullopt;
  }

 private:
  bool list_form() const { return step_.uneven && step_.variant; }
  // Elements group rank `from` sends to group rank `to`.
  std::size_t split(int from, int to) const {
    if (!step_.uneven) return step_.count;
    return element_bits(c_.key(from, kSizeStream), static_cast<std::size_t>(to)) %
           (step_.count + 1);
  }
  std::vector<Bytes> inputs_, outputs_;
  std::vector<Expected> expected_;
  std::vector<std::size_t> input_splits_, output_splits_;
};

class BarrierOp : public OpBase {
 public:
  using OpBase::OpBase;
  Works issue(ProcessGroup& g, bool async) override {
    if (async) return one(g.ibarrier());
    g.barrier();
    return {};
  }
  std::optional<std::string> check() const override { return std::nullopt; }
};

// Tags unique to the step, so that a receive from kAnySource cannot take another step's
// message.
int step_tag(const Step& step) {
  return static_cast<int>((step.index % 1000000) * 1000 + step.tag % 1000);
}

class SendRecvOp : public OpBase {
 public:
  explicit SendRecvOp(const OpContext& c)
      : OpBase(c), sender_(step_.root_in(c.size())), receiver_(step_.receiver_in(c.size())) {
    const Bytes sent = values(sender_, 0, step_.count);
    data_ = c.me == sender_ ? sent : untouched(step_.count);
    expected_ = exact_bytes(dtype_, sent);
    bytes_ = sent.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    const int tag = step_tag(step_);
    if (c_.me == sender_) {
      if (async) return one(g.isend(cview(data_, dtype_), receiver_, tag));
      g.send(cview(data_, dtype_), receiver_, tag);
      return {};
    }
    const int from = step_.variant ? kAnySource : sender_;
    if (async) {
      work_ = g.irecv(view(data_, dtype_), from, tag);
      return one(work_);
    }
    source_ = g.recv(view(data_, dtype_), from, tag);
    return {};
  }
  std::optional<std::string> check() const override {
    if (c_.me != receiver_) return std::nullopt;
    const int source = work_ ? work_->source_rank() : source_;
    if (source != sender_) {
      return "the receive reports source rank " + std::to_string(source) + ", sent by " +
             std::to_string(sender_);
    }
    return compare("received message", expected_, data_);
  }

 private:
  int sender_, receiver_;
  int source_ = -1;
  std::shared_ptr<Work> work_;
  Bytes data_;
  Expected expected_;
};

// Every member sends to the next and receives from the previous, at once.
class RingOp : public OpBase {
 public:
  explicit RingOp(const OpContext& c) : OpBase(c) {
    const int n = c.size();
    next_ = (c.me + 1) % n;
    prev_ = (c.me + n - 1) % n;
    sent_ = values(c.me, 0, step_.count);
    received_ = untouched(step_.count);
    expected_ = exact_bytes(dtype_, values(prev_, 0, step_.count));
    bytes_ = sent_.size();
  }
  Works issue(ProcessGroup& g, bool async) override {
    const int tag = step_tag(step_);
    Works works;
    if (step_.variant) {
      works = g.batch_isend_irecv({P2POp::send(cview(sent_, dtype_), next_, tag),
                                   P2POp::recv(view(received_, dtype_), prev_, tag)});
    } else {
      works.push_back(g.irecv(view(received_, dtype_), prev_, tag));
      works.push_back(g.isend(cview(sent_, dtype_), next_, tag));
    }
    if (async) return works;
    for (auto& w : works) w->wait();
    return {};
  }
  std::optional<std::string> check() const override {
    return compare("message from rank " + std::to_string(prev_), expected_, received_);
  }

 private:
  int next_ = 0, prev_ = 0;
  Bytes sent_, received_;
  Expected expected_;
};

// scan (ranks 0..me) or exscan (ranks 0..me-1; rank 0's output untouched). Blocking only: weft
// has no async scan. AVG has no meaning for a scan; the step's op falls back to SUM.
class ScanOp : public OpBase {
 public:
  explicit ScanOp(const OpContext& c) : OpBase(c) {
    if (step_.reduce.kind == ReduceOp::kAvg) step_.reduce = ReduceOp::kSum;
    const auto range = range_for(step_.reduce);
    input_ = values(c.me, 0, step_.count, range);
    output_ = untouched(step_.count);
    std::vector<int> before;
    const int last = exclusive() ? c.me - 1 : c.me;
    for (int r = 0; r <= last; ++r) before.push_back(r);
    expected_ = before.empty() ? exact_bytes(dtype_, untouched(step_.count))
                               : reduction(before, step_.count,
                                           [&](int r) { return values(r, 0, step_.count, range); });
    bytes_ = input_.size();
  }
  Works issue(ProcessGroup& g, bool) override {
    if (exclusive()) {
      g.exscan(cview(input_, dtype_), view(output_, dtype_), step_.reduce);
    } else {
      g.scan(cview(input_, dtype_), view(output_, dtype_), step_.reduce);
    }
    return {};
  }
  std::optional<std::string> check() const override {
    return compare(exclusive() ? "exscan result" : "scan result", expected_, output_);
  }

 private:
  bool exclusive() const { return step_.variant; }
  Bytes input_, output_;
  Expected expected_;
};

}  // namespace

uint64_t OpContext::key(int rank, uint64_t stream) const {
  return buffer_key(seed, step->index, (*members)[static_cast<std::size_t>(rank)], stream);
}

std::unique_ptr<SoakOp> make_op(const OpContext& c) {
  const Step& step = *c.step;
  switch (step.op) {
    case OpKind::kAllReduce:
      return std::make_unique<AllReduceOp>(c);
    case OpKind::kBroadcast:
      return std::make_unique<BroadcastOp>(c);
    case OpKind::kReduce:
      return std::make_unique<ReduceOpRun>(c);
    case OpKind::kAllGather:
      return std::make_unique<AllGatherOp>(c);
    case OpKind::kGather:
      return std::make_unique<GatherOp>(c);
    case OpKind::kScatter:
      return std::make_unique<ScatterOp>(c);
    case OpKind::kReduceScatter:
      return std::make_unique<ReduceScatterOp>(c);
    case OpKind::kAllToAll:
      return std::make_unique<AllToAllOp>(c);
    case OpKind::kBarrier:
      return std::make_unique<BarrierOp>(c);
    case OpKind::kSendRecv: {
      if (c.size() < 2) return nullptr;
      const bool involved = c.me == step.root_in(c.size()) || c.me == step.receiver_in(c.size());
      return involved ? std::make_unique<SendRecvOp>(c) : nullptr;
    }
    case OpKind::kRing:
      return c.size() < 2 ? nullptr : std::make_unique<RingOp>(c);
    case OpKind::kScan:
      return std::make_unique<ScanOp>(c);
    default:
      return nullptr;  // kWaitSome and kRegroup are the runner's
  }
}

}  // namespace weft::soak

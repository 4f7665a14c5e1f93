// ProcessGroup's collectives: check the arguments, describe the call (signature, bytes),
// ask the selector, and hand the body to the launcher. Reductions' extras live here, not in
// the algorithms: PREMUL_SUM scales this rank's input first, AVG divides the sum at the end.
#include <cstring>
#include <numeric>

#include "api/argument_checks.h"
#include "api/collective_launcher.h"
#include "api/process_group_impl.h"
#include "coll/algorithms.h"
#include "coll/member_list.h"
#include "coll/selector.h"
#include "reduce/reduce_kernels.h"
#include "weft/process_group.h"

namespace weft {

namespace {

using Bytes = std::vector<uint8_t>;
// One size per rank, inline for small groups (an allocation is a visible part of a small call).
using Sizes = coll::MemberList<std::size_t>;

core::OpSignature signature_of(core::OpKind kind, DType dtype, std::size_t count,
                               ReduceOp::Kind reduce = ReduceOp::kSum, int root = -1) {
  core::OpSignature signature;
  signature.kind = kind;
  signature.dtype = dtype;
  signature.count = count;
  signature.reduce = reduce;
  signature.root = root;
  return signature;
}

void check_op(const core::Communicator& comm, const char* name, DType dtype, ReduceOp op) {
  try {
    reduce::check_supported(dtype, op);
  } catch (const Error& e) {
    api::invalid_argument(comm, name, e.message());
  }
}

[[noreturn, gnu::cold]] void invalid_root(const core::Communicator& comm, const char* name,
                                          int root) {
  api::invalid_argument(comm, name,
                        "invalid root " + std::to_string(root) + ": the group has ranks 0.." +
                            std::to_string(comm.size() - 1));
}

void check_root(const core::Communicator& comm, const char* name, int root) {
  if (root < 0 || root >= comm.size()) [[unlikely]]
    invalid_root(comm, name, root);
}

void check_same_dtype(const core::Communicator& comm, const char* name, DType a, DType b) {
  if (a != b) {
    api::invalid_argument(
        comm, name,
        "input is " + std::string(name_of(a)) + " but output is " + std::string(name_of(b)));
  }
}

void check_count(const core::Communicator& comm, const char* name, const char* what,
                 std::size_t got, std::size_t want) {
  if (got != want) {
    api::invalid_argument(comm, name,
                          std::string(what) + " has " + std::to_string(got) +
                              " elements; expected " + std::to_string(want));
  }
}

void check_list_size(const core::Communicator& comm, const char* name, const char* what,
                     std::size_t got) {
  if (got != static_cast<std::size_t>(comm.size())) {
    api::invalid_argument(comm, name,
                          std::string(what) + " has " + std::to_string(got) +
                              " entries; expected one per rank (" + std::to_string(comm.size()) +
                              ")");
  }
}

// The selector's answer; out of line, as pick()'s common case needs none of this.
[[gnu::noinline]] coll::Algorithm ask_selector(const core::Communicator& comm,
                                               core::OpKind collective, std::size_t bytes,
                                               const CollectiveOptions& options,
                                               bool equal_blocks) {
  coll::SelectionInput input;
  input.collective = collective;
  input.bytes = bytes;
  input.group_size = comm.size();
  input.equal_blocks = equal_blocks;
  input.forced = options.algorithm;
  input.single_host = comm.single_host();
  input.spans_hosts = comm.spans_hosts_with_neighbours();
  if (input.spans_hosts) {
    input.hosts = comm.host_layout().hosts();
    input.largest_host = comm.host_layout().largest_host();
  }
  input.algorithm_setting = &comm.algorithm_setting();
  input.network = &comm.network_settings();
  try {
    return coll::choose_algorithm(input);
  } catch (const Error& e) {
    api::invalid_argument(comm, core::name_of(collective), e.message());
  }
}

inline coll::Algorithm pick(const core::Communicator& comm, core::OpKind collective,
                            std::size_t bytes, const CollectiveOptions& options,
                            bool equal_blocks = true) {
  // Nothing forced on a group on one host, the common case: the selector's first rule, without
  // building its input, which would be a visible part of a small call.
  if (options.algorithm.empty() && comm.algorithm_setting().empty() &&
      coll::runs_shm_unforced(collective, comm.single_host())) {
    return coll::Algorithm::kShm;
  }
  // Without the call's own option, the answer depends on the shape of the call alone.
  static_assert(core::kOpKindCount <= 32, "the shape gives the kind 5 bits");
  constexpr uint64_t kLargestRemembered = util::ChoiceMemo::kMaxKey >> 6;
  if (!options.algorithm.empty() || bytes > kLargestRemembered) {
    return ask_selector(comm, collective, bytes, options, equal_blocks);
  }
  const uint64_t shape = static_cast<uint64_t>(bytes) << 6 |
                         static_cast<uint64_t>(collective) << 1 | (equal_blocks ? 1 : 0);
  if (auto known = comm.selection_memo().find(shape)) return static_cast<coll::Algorithm>(*known);
  coll::Algorithm chosen = ask_selector(comm, collective, bytes, options, equal_blocks);
  comm.selection_memo().remember(shape, static_cast<uint8_t>(chosen));
  return chosen;
}

// A private copy of this rank's contribution, scaled for PREMUL_SUM.
Bytes premultiplied_copy(const void* data, std::size_t count, DType dtype, ReduceOp op) {
  Bytes copy(count * size_of(dtype));
  if (!copy.empty()) std::memcpy(copy.data(), data, copy.size());
  if (op.kind == ReduceOp::kPremulSum) reduce::scale(dtype, copy.data(), count, op.factor);
  return copy;
}

void finish_average(ReduceOp op, DType dtype, void* data, std::size_t count, int size) {
  if (op.kind == ReduceOp::kAvg) reduce::divide(dtype, data, count, static_cast<std::size_t>(size));
}

Sizes prefix_offsets(const Sizes& sizes) {
  const int n = static_cast<int>(sizes.size());
  Sizes offsets(n);
  std::size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    offsets[i] = offset;
    offset += sizes[i];
  }
  return offsets;
}

void copy_bytes(void* to, const void* from, std::size_t bytes) {
  if (bytes && to != from) std::memmove(to, from, bytes);
}

// An out-of-place call's input and output: the same dtype and count, and apart (the same
// memory is the in-place call; a partial overlap has no meaning).
void check_out_of_place(const core::Communicator& comm, const char* name, ConstBufferView input,
                        BufferView output) {
  check_same_dtype(comm, name, input.dtype(), output.dtype());
  check_count(comm, name, "the output", output.count(), input.count());
  api::check_buffer(comm, output.data(), output.count(), name, "the output");
  const auto* in = static_cast<const uint8_t*>(input.data());
  const auto* out = static_cast<const uint8_t*>(output.data());
  if (in < out + output.bytes() && out < in + input.bytes()) {
    api::invalid_argument(comm, name,
                          "the input and the output overlap without being the same buffer");
  }
}

}  // namespace

// --- broadcast ---------------------------------------------------------------------------

static std::shared_ptr<Work> broadcast_impl(const std::shared_ptr<core::Communicator>& comm,
                                            ConstBufferView input, BufferView data, int root,
                                            const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, data.data(), data.count(), "broadcast", "the buffer");
  check_root(*comm, "broadcast", root);
  const bool out_of_place = input.data() != data.data() && comm->rank() == root;
  if (out_of_place) check_out_of_place(*comm, "broadcast", input, data);
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kBroadcast, data.bytes(), options);
  return api::launch(
      comm,
      {"broadcast",
       signature_of(core::OpKind::kBroadcast, data.dtype(), data.count(), ReduceOp::kSum, root),
       static_cast<int64_t>(data.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        if (out_of_place) copy_bytes(data.data(), input.data(), data.bytes());
        coll::run_broadcast(algorithm, call, data.data(), data.bytes(), root);
      },
      async);
}

void ProcessGroup::broadcast(BufferView data, int root, const CollectiveOptions& options) {
  broadcast_impl(impl_->comm, data, data, root, options, false);
}
std::shared_ptr<Work> ProcessGroup::ibroadcast(BufferView data, int root,
                                               const CollectiveOptions& options) {
  return broadcast_impl(impl_->comm, data, data, root, options, true);
}
void ProcessGroup::broadcast(ConstBufferView input, BufferView output, int root,
                             const CollectiveOptions& options) {
  broadcast_impl(impl_->comm, input, output, root, options, false);
}
std::shared_ptr<Work> ProcessGroup::ibroadcast(ConstBufferView input, BufferView output, int root,
                                               const CollectiveOptions& options) {
  return broadcast_impl(impl_->comm, input, output, root, options, true);
}

// --- all_reduce ----------------------------------------------------------------------------

static std::shared_ptr<Work> all_reduce_impl(const std::shared_ptr<core::Communicator>& comm,
                                             ConstBufferView input, BufferView data, ReduceOp op,
                                             const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, data.data(), data.count(), "all_reduce", "the buffer");
  check_op(*comm, "all_reduce", data.dtype(), op);
  const bool out_of_place = input.data() != data.data();
  if (out_of_place) check_out_of_place(*comm, "all_reduce", input, data);
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kAllReduce, data.bytes(), options);
  int size = comm->size();
  return api::launch(
      comm,
      {"all_reduce", signature_of(core::OpKind::kAllReduce, data.dtype(), data.count(), op.kind),
       static_cast<int64_t>(data.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        const void* source = input.data();
        if (op.kind == ReduceOp::kPremulSum) {
          // Scaled in the output: the input is the caller's, never written.
          if (out_of_place) copy_bytes(data.data(), input.data(), data.bytes());
          reduce::scale(data.dtype(), data.data(), data.count(), op.factor);
          source = data.data();
        }
        // Out of place, the ring reads the input where it stands (no up-front copy).
        coll::run_all_reduce(algorithm, call, source, data.data(), data.count(), data.dtype(), op);
        finish_average(op, data.dtype(), data.data(), data.count(), size);
      },
      async);
}

void ProcessGroup::all_reduce(BufferView data, ReduceOp op, const CollectiveOptions& options) {
  all_reduce_impl(impl_->comm, data, data, op, options, false);
}
std::shared_ptr<Work> ProcessGroup::iall_reduce(BufferView data, ReduceOp op,
                                                const CollectiveOptions& options) {
  return all_reduce_impl(impl_->comm, data, data, op, options, true);
}
void ProcessGroup::all_reduce(ConstBufferView input, BufferView output, ReduceOp op,
                              const CollectiveOptions& options) {
  all_reduce_impl(impl_->comm, input, output, op, options, false);
}
std::shared_ptr<Work> ProcessGroup::iall_reduce(ConstBufferView input, BufferView output,
                                                ReduceOp op, const CollectiveOptions& options) {
  return all_reduce_impl(impl_->comm, input, output, op, options, true);
}

// --- reduce ----------------------------------------------------------------------------------

// In place, `data` is both the contribution and (on the root) the result. Out of place the
// contribution is `input`; the root's result goes to `output`, which non-roots may leave empty.
static std::shared_ptr<Work> reduce_impl(const std::shared_ptr<core::Communicator>& comm,
                                         ConstBufferView input, BufferView output, int root,
                                         ReduceOp op, const CollectiveOptions& options,
                                         bool async) {
  api::check_buffer(*comm, input.data(), input.count(), "reduce", "the buffer");
  check_root(*comm, "reduce", root);
  check_op(*comm, "reduce", input.dtype(), op);
  const bool in_place = input.data() == output.data();
  const bool is_root = comm->rank() == root;
  if (!in_place && is_root) check_out_of_place(*comm, "reduce", input, output);
  // Where the reduction runs on this rank: the caller's buffer when it may be written (in
  // place, or the output of the root or of a non-root that gave a full one), else a copy.
  const bool own_scratch = !in_place && !is_root && output.count() != input.count();
  if (!in_place && !is_root && !own_scratch) {
    check_out_of_place(*comm, "reduce", input, output);
  }
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kReduce, input.bytes(), options);
  int size = comm->size();
  const DType dtype = input.dtype();
  const std::size_t count = input.count();
  return api::launch(
      comm,
      {"reduce", signature_of(core::OpKind::kReduce, dtype, count, op.kind, root),
       static_cast<int64_t>(input.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        if (in_place && op.kind != ReduceOp::kPremulSum) {
          coll::run_reduce(algorithm, call, output.data(), count, dtype, op, root);
        } else if (in_place || own_scratch) {
          // Non-roots' data must stay as it was: reduce a (scaled) copy.
          Bytes scaled = premultiplied_copy(input.data(), count, dtype, op);
          coll::run_reduce(algorithm, call, scaled.data(), count, dtype, op, root);
          if (is_root) copy_bytes(output.data(), scaled.data(), scaled.size());
        } else {
          copy_bytes(output.data(), input.data(), input.bytes());
          if (op.kind == ReduceOp::kPremulSum) {
            reduce::scale(dtype, output.data(), count, op.factor);
          }
          coll::run_reduce(algorithm, call, output.data(), count, dtype, op, root);
        }
        if (is_root) finish_average(op, dtype, output.data(), count, size);
      },
      async);
}

void ProcessGroup::reduce(BufferView data, int root, ReduceOp op,
                          const CollectiveOptions& options) {
  reduce_impl(impl_->comm, data, data, root, op, options, false);
}
std::shared_ptr<Work> ProcessGroup::ireduce(BufferView data, int root, ReduceOp op,
                                            const CollectiveOptions& options) {
  return reduce_impl(impl_->comm, data, data, root, op, options, true);
}
void ProcessGroup::reduce(ConstBufferView input, BufferView output, int root, ReduceOp op,
                          const CollectiveOptions& options) {
  reduce_impl(impl_->comm, input, output, root, op, options, false);
}
std::shared_ptr<Work> ProcessGroup::ireduce(ConstBufferView input, BufferView output, int root,
                                            ReduceOp op, const CollectiveOptions& options) {
  return reduce_impl(impl_->comm, input, output, root, op, options, true);
}

// --- all_gather ------------------------------------------------------------------------------

static std::shared_ptr<Work> all_gather_impl(const std::shared_ptr<core::Communicator>& comm,
                                             ConstBufferView input, BufferView output,
                                             const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, input.data(), input.count(), "all_gather", "the input");
  api::check_buffer(*comm, output.data(), output.count(), "all_gather", "the output");
  check_same_dtype(*comm, "all_gather", input.dtype(), output.dtype());
  check_count(*comm, "all_gather", "the output", output.count(), input.count() * comm->size());
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kAllGather, output.bytes(), options);
  return api::launch(
      comm,
      {"all_gather", signature_of(core::OpKind::kAllGather, input.dtype(), input.count()),
       static_cast<int64_t>(output.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      // No size list: building one was a visible part of a small call's cost.
      [=](coll::CollectiveCall& call) {
        const auto* in = static_cast<const uint8_t*>(input.data());
        auto* out = static_cast<uint8_t*>(output.data());
        uint8_t* mine = out + call.rank() * input.bytes();
        // The algorithms take an input apart from the output, or exactly at my block; one that
        // overlaps the output otherwise is put in place first.
        const bool apart = in + input.bytes() <= out || out + output.bytes() <= in;
        if (in == mine || input.bytes() == 0 || apart) {
          coll::run_even_all_gather(algorithm, call, in, out, input.bytes());
        } else {
          copy_bytes(mine, in, input.bytes());
          coll::run_even_all_gather(algorithm, call, mine, out, input.bytes());
        }
      },
      async);
}

void ProcessGroup::all_gather(ConstBufferView input, BufferView output,
                              const CollectiveOptions& options) {
  all_gather_impl(impl_->comm, input, output, options, false);
}
std::shared_ptr<Work> ProcessGroup::iall_gather(ConstBufferView input, BufferView output,
                                                const CollectiveOptions& options) {
  return all_gather_impl(impl_->comm, input, output, options, true);
}

static std::shared_ptr<Work> all_gather_list_impl(const std::shared_ptr<core::Communicator>& comm,
                                                  ConstBufferView input,
                                                  const std::vector<BufferView>& outputs,
                                                  const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, input.data(), input.count(), "all_gather", "the input");
  check_list_size(*comm, "all_gather", "the output list", outputs.size());
  Sizes byte_counts(comm->size());
  std::size_t total = 0, total_count = 0;
  bool equal = true;
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    const BufferView& output = outputs[r];
    api::check_buffer(*comm, output.data(), output.count(), "all_gather", "an output");
    check_same_dtype(*comm, "all_gather", input.dtype(), output.dtype());
    byte_counts[r] = output.bytes();
    total += output.bytes();
    total_count += output.count();
    equal = equal && output.bytes() == outputs[0].bytes();
  }
  check_count(*comm, "all_gather", "this rank's output", outputs[comm->rank()].count(),
              input.count());
  coll::Algorithm algorithm =
      pick(*comm, core::OpKind::kAllGather, total, options, /*equal_blocks=*/equal);
  // Uneven sizes: the signature carries the total, which every rank agrees on.
  return api::launch(
      comm,
      {"all_gather", signature_of(core::OpKind::kAllGather, input.dtype(), total_count),
       static_cast<int64_t>(total), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        Bytes gathered(total);
        auto offsets = prefix_offsets(byte_counts);
        copy_bytes(gathered.data() + offsets[call.rank()], input.data(), input.bytes());
        coll::run_all_gather(algorithm, call, gathered.data() + offsets[call.rank()],
                             gathered.data(), byte_counts);
        for (std::size_t r = 0; r < outputs.size(); ++r) {
          copy_bytes(outputs[r].data(), gathered.data() + offsets[r], byte_counts[r]);
        }
      },
      async);
}

void ProcessGroup::all_gather(ConstBufferView input, const std::vector<BufferView>& outputs,
                              const CollectiveOptions& options) {
  all_gather_list_impl(impl_->comm, input, outputs, options, false);
}
std::shared_ptr<Work> ProcessGroup::iall_gather(ConstBufferView input,
                                                const std::vector<BufferView>& outputs,
                                                const CollectiveOptions& options) {
  return all_gather_list_impl(impl_->comm, input, outputs, options, true);
}

// --- gather / scatter ------------------------------------------------------------------------

static std::shared_ptr<Work> gather_impl(const std::shared_ptr<core::Communicator>& comm,
                                         ConstBufferView input,
                                         const std::vector<BufferView>& outputs, int root,
                                         const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, input.data(), input.count(), "gather", "the input");
  check_root(*comm, "gather", root);
  if (comm->rank() == root) {
    check_list_size(*comm, "gather", "the output list", outputs.size());
    for (const BufferView& output : outputs) {
      api::check_buffer(*comm, output.data(), output.count(), "gather", "an output");
      check_same_dtype(*comm, "gather", input.dtype(), output.dtype());
      check_count(*comm, "gather", "an output", output.count(), input.count());
    }
  }
  coll::Algorithm algorithm =
      pick(*comm, core::OpKind::kGather, input.bytes() * comm->size(), options);
  Sizes byte_counts(comm->size(), input.bytes());
  return api::launch(
      comm,
      {"gather",
       signature_of(core::OpKind::kGather, input.dtype(), input.count(), ReduceOp::kSum, root),
       static_cast<int64_t>(input.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        Bytes gathered(call.rank() == root ? input.bytes() * call.size() : 0);
        coll::run_gather(algorithm, call, input.data(), gathered.data(), byte_counts, root);
        if (call.rank() != root) return;
        for (std::size_t r = 0; r < outputs.size(); ++r) {
          copy_bytes(outputs[r].data(), gathered.data() + r * input.bytes(), input.bytes());
        }
      },
      async);
}

void ProcessGroup::gather(ConstBufferView input, const std::vector<BufferView>& outputs, int root,
                          const CollectiveOptions& options) {
  gather_impl(impl_->comm, input, outputs, root, options, false);
}
std::shared_ptr<Work> ProcessGroup::igather(ConstBufferView input,
                                            const std::vector<BufferView>& outputs, int root,
                                            const CollectiveOptions& options) {
  return gather_impl(impl_->comm, input, outputs, root, options, true);
}

static std::shared_ptr<Work> scatter_impl(const std::shared_ptr<core::Communicator>& comm,
                                          const std::vector<ConstBufferView>& inputs,
                                          BufferView output, int root,
                                          const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, output.data(), output.count(), "scatter", "the output");
  check_root(*comm, "scatter", root);
  if (comm->rank() == root) {
    check_list_size(*comm, "scatter", "the input list", inputs.size());
    for (const ConstBufferView& input : inputs) {
      api::check_buffer(*comm, input.data(), input.count(), "scatter", "an input");
      check_same_dtype(*comm, "scatter", input.dtype(), output.dtype());
      check_count(*comm, "scatter", "an input", input.count(), output.count());
    }
  }
  coll::Algorithm algorithm =
      pick(*comm, core::OpKind::kScatter, output.bytes() * comm->size(), options);
  Sizes byte_counts(comm->size(), output.bytes());
  return api::launch(
      comm,
      {"scatter",
       signature_of(core::OpKind::kScatter, output.dtype(), output.count(), ReduceOp::kSum, root),
       static_cast<int64_t>(output.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        Bytes dealt;
        if (call.rank() == root) {
          dealt.resize(output.bytes() * call.size());
          for (std::size_t r = 0; r < inputs.size(); ++r) {
            copy_bytes(dealt.data() + r * output.bytes(), inputs[r].data(), output.bytes());
          }
        }
        coll::run_scatter(algorithm, call, dealt.data(), output.data(), byte_counts, root);
      },
      async);
}

void ProcessGroup::scatter(const std::vector<ConstBufferView>& inputs, BufferView output, int root,
                           const CollectiveOptions& options) {
  scatter_impl(impl_->comm, inputs, output, root, options, false);
}
std::shared_ptr<Work> ProcessGroup::iscatter(const std::vector<ConstBufferView>& inputs,
                                             BufferView output, int root,
                                             const CollectiveOptions& options) {
  return scatter_impl(impl_->comm, inputs, output, root, options, true);
}

// --- reduce_scatter --------------------------------------------------------------------------

// A reduce_scatter's contributions, one block per rank: in one buffer in rank order (the tensor
// form, or a list whose blocks happen to lie so), or each block where the caller keeps it.
struct ReduceScatterInputs {
  const void* packed = nullptr;         // the blocks in one buffer, or null
  std::vector<ConstBufferView> blocks;  // when not packed
};

static std::shared_ptr<Work> reduce_scatter_common(const std::shared_ptr<core::Communicator>& comm,
                                                   ReduceScatterInputs inputs, Sizes counts,
                                                   BufferView output, ReduceOp op,
                                                   const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, output.data(), output.count(), "reduce_scatter", "the output");
  check_op(*comm, "reduce_scatter", output.dtype(), op);
  check_count(*comm, "reduce_scatter", "the output", output.count(), counts[comm->rank()]);
  const DType dtype = output.dtype();
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  const std::size_t total_bytes = total * size_of(dtype);
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kReduceScatter, total_bytes, options);
  const int size = comm->size();
  return api::launch(
      comm,
      {"reduce_scatter", signature_of(core::OpKind::kReduceScatter, dtype, total, op.kind),
       static_cast<int64_t>(total_bytes), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      // Moved, not copied: a copy allocates, a visible part of a small call's cost.
      [inputs = std::move(inputs), counts = std::move(counts), algorithm, output, op, dtype, total,
       total_bytes, size](coll::CollectiveCall& call) {
        // The algorithm reads the contributions as one block and never writes them: use the
        // caller's memory when it already is one block, else pack (and scale) a copy.
        Bytes copy;
        const void* packed = inputs.packed;
        if (!packed || op.kind == ReduceOp::kPremulSum) {
          copy.resize(total_bytes);
          if (packed) {
            copy_bytes(copy.data(), packed, total_bytes);
          } else {
            std::size_t offset = 0;
            for (const ConstBufferView& block : inputs.blocks) {
              copy_bytes(copy.data() + offset, block.data(), block.bytes());
              offset += block.bytes();
            }
          }
          if (op.kind == ReduceOp::kPremulSum) reduce::scale(dtype, copy.data(), total, op.factor);
          packed = copy.data();
        }
        coll::run_reduce_scatter(algorithm, call, packed, output.data(), counts, dtype, op);
        finish_average(op, dtype, output.data(), output.count(), size);
      },
      async);
}

static std::shared_ptr<Work> reduce_scatter_tensor_impl(
    const std::shared_ptr<core::Communicator>& comm, ConstBufferView input, BufferView output,
    ReduceOp op, const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, input.data(), input.count(), "reduce_scatter", "the input");
  check_same_dtype(*comm, "reduce_scatter", input.dtype(), output.dtype());
  check_count(*comm, "reduce_scatter", "the input", input.count(), output.count() * comm->size());
  if (op.kind == ReduceOp::kPremulSum) {  // scales a copy of the input first
    return reduce_scatter_common(comm, {input.data(), {}}, Sizes(comm->size(), output.count()),
                                 output, op, options, async);
  }
  api::check_buffer(*comm, output.data(), output.count(), "reduce_scatter", "the output");
  check_op(*comm, "reduce_scatter", output.dtype(), op);
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kReduceScatter, input.bytes(), options);
  const int size = comm->size();
  // No size lists and no copy: building them was a visible part of a small call's cost.
  return api::launch(
      comm,
      {"reduce_scatter",
       signature_of(core::OpKind::kReduceScatter, input.dtype(), input.count(), op.kind),
       static_cast<int64_t>(input.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [input, output, op, algorithm, size](coll::CollectiveCall& call) {
        coll::run_even_reduce_scatter(algorithm, call, input.data(), output.data(), output.count(),
                                      output.dtype(), op);
        finish_average(op, output.dtype(), output.data(), output.count(), size);
      },
      async);
}

static std::shared_ptr<Work> reduce_scatter_list_impl(
    const std::shared_ptr<core::Communicator>& comm, const std::vector<ConstBufferView>& inputs,
    BufferView output, ReduceOp op, const CollectiveOptions& options, bool async) {
  check_list_size(*comm, "reduce_scatter", "the input list", inputs.size());
  Sizes counts(comm->size());
  bool contiguous = true;
  for (std::size_t r = 0; r < inputs.size(); ++r) {
    const ConstBufferView& input = inputs[r];
    api::check_buffer(*comm, input.data(), input.count(), "reduce_scatter", "an input");
    check_same_dtype(*comm, "reduce_scatter", input.dtype(), output.dtype());
    counts[r] = input.count();
    contiguous = contiguous && (r == 0 || static_cast<const uint8_t*>(input.data()) ==
                                              static_cast<const uint8_t*>(inputs[r - 1].data()) +
                                                  inputs[r - 1].bytes());
  }
  ReduceScatterInputs blocks;
  if (contiguous) {
    blocks.packed = inputs[0].data();
  } else {
    blocks.blocks = inputs;
  }
  return reduce_scatter_common(comm, std::move(blocks), std::move(counts), output, op, options,
                               async);
}

void ProcessGroup::reduce_scatter(ConstBufferView input, BufferView output, ReduceOp op,
                                  const CollectiveOptions& options) {
  reduce_scatter_tensor_impl(impl_->comm, input, output, op, options, false);
}
std::shared_ptr<Work> ProcessGroup::ireduce_scatter(ConstBufferView input, BufferView output,
                                                    ReduceOp op, const CollectiveOptions& options) {
  return reduce_scatter_tensor_impl(impl_->comm, input, output, op, options, true);
}
void ProcessGroup::reduce_scatter(const std::vector<ConstBufferView>& inputs, BufferView output,
                                  ReduceOp op, const CollectiveOptions& options) {
  reduce_scatter_list_impl(impl_->comm, inputs, output, op, options, false);
}
std::shared_ptr<Work> ProcessGroup::ireduce_scatter(const std::vector<ConstBufferView>& inputs,
                                                    BufferView output, ReduceOp op,
                                                    const CollectiveOptions& options) {
  return reduce_scatter_list_impl(impl_->comm, inputs, output, op, options, true);
}

// --- all_to_all ------------------------------------------------------------------------------

// The byte count of each of a call's equal blocks (checked: `count` divides evenly).
static std::size_t equal_block_bytes(const core::Communicator& comm, const char* what,
                                     std::size_t count, std::size_t element) {
  const auto size = static_cast<std::size_t>(comm.size());
  if (count % size != 0) {
    api::invalid_argument(comm, "all_to_all",
                          std::string(what) + " has " + std::to_string(count) +
                              " elements, not divisible into " + std::to_string(size) +
                              " equal blocks (pass split sizes)");
  }
  return count / size * element;
}

// The byte counts of a call's blocks: its split sizes (checked), or equal blocks.
static Sizes block_bytes(const core::Communicator& comm, const char* what,
                         const std::vector<std::size_t>& splits, std::size_t count,
                         std::size_t element) {
  int size = comm.size();
  if (splits.empty()) return Sizes(size, equal_block_bytes(comm, what, count, element));
  check_list_size(comm, "all_to_all", what, splits.size());
  // Each block lies inside the buffer, so their sum (and bytes) cannot wrap around.
  for (int r = 0; r < size; ++r) {
    if (splits[r] > count) {
      api::invalid_argument(comm, "all_to_all",
                            std::string(what) + "'s split size for rank " + std::to_string(r) +
                                " is " + std::to_string(splits[r]) + " elements, more than the " +
                                std::to_string(count) + " it holds");
    }
  }
  std::size_t sum = std::accumulate(splits.begin(), splits.end(), std::size_t{0});
  check_count(comm, "all_to_all", what, count, sum);
  Sizes bytes(size);
  for (int r = 0; r < size; ++r) bytes[r] = splits[r] * element;
  return bytes;
}

static std::shared_ptr<Work> all_to_all_impl(const std::shared_ptr<core::Communicator>& comm,
                                             ConstBufferView input, BufferView output,
                                             const std::vector<std::size_t>& input_splits,
                                             const std::vector<std::size_t>& output_splits,
                                             const CollectiveOptions& options, bool async) {
  api::check_buffer(*comm, input.data(), input.count(), "all_to_all", "the input");
  api::check_buffer(*comm, output.data(), output.count(), "all_to_all", "the output");
  check_same_dtype(*comm, "all_to_all", input.dtype(), output.dtype());
  const std::size_t element = size_of(input.dtype());
  if (input_splits.empty() && output_splits.empty()) {
    const std::size_t block = equal_block_bytes(*comm, "the input", input.count(), element);
    equal_block_bytes(*comm, "the output", output.count(), element);
    check_count(*comm, "all_to_all", "the output", output.count(), input.count());
    coll::Algorithm algorithm = pick(*comm, core::OpKind::kAllToAll, input.bytes(), options);
    // No size lists: building them was a visible part of a small call's cost.
    return api::launch(
        comm,
        {"all_to_all", signature_of(core::OpKind::kAllToAll, input.dtype(), input.count()),
         static_cast<int64_t>(input.bytes()), options.segment_bytes, options.timeout,
         coll::name_of(algorithm)},
        [block, algorithm, input, output](coll::CollectiveCall& call) {
          coll::run_even_all_to_all(algorithm, call, input.data(), output.data(), block);
        },
        async);
  }
  Sizes sends = block_bytes(*comm, "the input", input_splits, input.count(), element);
  Sizes recvs = block_bytes(*comm, "the output", output_splits, output.count(), element);
  coll::Algorithm algorithm =
      pick(*comm, core::OpKind::kAllToAll, input.bytes(), options, /*equal_blocks=*/false);
  return api::launch(
      comm,
      {"all_to_all",
       // Per-peer counts legitimately differ by rank: only even calls carry a count.
       signature_of(core::OpKind::kAllToAll, input.dtype(), 0), static_cast<int64_t>(input.bytes()),
       options.segment_bytes, options.timeout, coll::name_of(algorithm)},
      // Moved, not copied: a copy allocates, a visible part of a small call's cost.
      [sends = std::move(sends), recvs = std::move(recvs), algorithm, input,
       output](coll::CollectiveCall& call) {
        Sizes send_offsets = prefix_offsets(sends);
        Sizes recv_offsets = prefix_offsets(recvs);
        coll::run_all_to_all(algorithm, call, input.data(), sends, send_offsets, output.data(),
                             recvs, recv_offsets);
      },
      async);
}

void ProcessGroup::all_to_all(ConstBufferView input, BufferView output,
                              const std::vector<std::size_t>& input_splits,
                              const std::vector<std::size_t>& output_splits,
                              const CollectiveOptions& options) {
  all_to_all_impl(impl_->comm, input, output, input_splits, output_splits, options, false);
}
std::shared_ptr<Work> ProcessGroup::iall_to_all(ConstBufferView input, BufferView output,
                                                const std::vector<std::size_t>& input_splits,
                                                const std::vector<std::size_t>& output_splits,
                                                const CollectiveOptions& options) {
  return all_to_all_impl(impl_->comm, input, output, input_splits, output_splits, options, true);
}

static std::shared_ptr<Work> all_to_all_list_impl(const std::shared_ptr<core::Communicator>& comm,
                                                  const std::vector<ConstBufferView>& inputs,
                                                  const std::vector<BufferView>& outputs,
                                                  const CollectiveOptions& options, bool async) {
  check_list_size(*comm, "all_to_all", "the input list", inputs.size());
  check_list_size(*comm, "all_to_all", "the output list", outputs.size());
  Sizes sends(comm->size()), recvs(comm->size());
  for (std::size_t r = 0; r < inputs.size(); ++r) {
    api::check_buffer(*comm, inputs[r].data(), inputs[r].count(), "all_to_all", "an input");
    api::check_buffer(*comm, outputs[r].data(), outputs[r].count(), "all_to_all", "an output");
    check_same_dtype(*comm, "all_to_all", inputs[r].dtype(), outputs[0].dtype());
    check_same_dtype(*comm, "all_to_all", inputs[0].dtype(), outputs[r].dtype());
    sends[r] = inputs[r].bytes();
    recvs[r] = outputs[r].bytes();
  }
  coll::Algorithm algorithm =
      pick(*comm, core::OpKind::kAllToAll,
           std::accumulate(sends.begin(), sends.end(), std::size_t{0}), options,
           /*equal_blocks=*/false);
  return api::launch(
      comm,
      {"all_to_all", signature_of(core::OpKind::kAllToAll, inputs[0].dtype(), 0), -1,
       options.segment_bytes, options.timeout, coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        Sizes send_offsets = prefix_offsets(sends);
        Sizes recv_offsets = prefix_offsets(recvs);
        const int last = call.size() - 1;
        Bytes packed(send_offsets[last] + sends[last]);
        for (std::size_t r = 0; r < inputs.size(); ++r) {
          copy_bytes(packed.data() + send_offsets[r], inputs[r].data(), sends[r]);
        }
        Bytes unpacked(recv_offsets[last] + recvs[last]);
        coll::run_all_to_all(algorithm, call, packed.data(), sends, send_offsets, unpacked.data(),
                             recvs, recv_offsets);
        for (std::size_t r = 0; r < outputs.size(); ++r) {
          copy_bytes(outputs[r].data(), unpacked.data() + recv_offsets[r], recvs[r]);
        }
      },
      async);
}

void ProcessGroup::all_to_all(const std::vector<ConstBufferView>& inputs,
                              const std::vector<BufferView>& outputs,
                              const CollectiveOptions& options) {
  all_to_all_list_impl(impl_->comm, inputs, outputs, options, false);
}
std::shared_ptr<Work> ProcessGroup::iall_to_all(const std::vector<ConstBufferView>& inputs,
                                                const std::vector<BufferView>& outputs,
                                                const CollectiveOptions& options) {
  return all_to_all_list_impl(impl_->comm, inputs, outputs, options, true);
}

// --- barrier, scan ---------------------------------------------------------------------------

static std::shared_ptr<Work> barrier_impl(const std::shared_ptr<core::Communicator>& comm,
                                          const CollectiveOptions& options, bool async) {
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kBarrier, 0, options);
  return api::launch(
      comm,
      {"barrier", signature_of(core::OpKind::kBarrier, DType::kUInt8, 0), 0, options.segment_bytes,
       options.timeout, coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) { coll::run_barrier(algorithm, call); }, async);
}

void ProcessGroup::barrier(const CollectiveOptions& options) {
  barrier_impl(impl_->comm, options, false);
}
std::shared_ptr<Work> ProcessGroup::ibarrier(const CollectiveOptions& options) {
  return barrier_impl(impl_->comm, options, true);
}

static void scan_impl(const std::shared_ptr<core::Communicator>& comm, ConstBufferView input,
                      BufferView output, ReduceOp op, const CollectiveOptions& options,
                      bool exclusive) {
  const char* name = exclusive ? "exscan" : "scan";
  api::check_buffer(*comm, input.data(), input.count(), name, "the input");
  api::check_buffer(*comm, output.data(), output.count(), name, "the output");
  check_same_dtype(*comm, name, input.dtype(), output.dtype());
  check_count(*comm, name, "the output", output.count(), input.count());
  check_op(*comm, name, input.dtype(), op);
  if (op.kind == ReduceOp::kAvg)
    api::invalid_argument(*comm, name, "AVG has no meaning for a scan");
  // Chosen as a scan either way: one WEFT_ALGO entry ("scan=...") covers both.
  coll::Algorithm algorithm = pick(*comm, core::OpKind::kScan, input.bytes(), options);
  api::launch(
      comm,
      {name,
       signature_of(exclusive ? core::OpKind::kExscan : core::OpKind::kScan, input.dtype(),
                    input.count(), op.kind),
       static_cast<int64_t>(input.bytes()), options.segment_bytes, options.timeout,
       coll::name_of(algorithm)},
      [=](coll::CollectiveCall& call) {
        if (op.kind == ReduceOp::kPremulSum) {
          Bytes scaled = premultiplied_copy(input.data(), input.count(), input.dtype(), op);
          coll::run_scan(algorithm, call, scaled.data(), output.data(), input.count(),
                         input.dtype(), op, exclusive);
        } else {
          coll::run_scan(algorithm, call, input.data(), output.data(), input.count(), input.dtype(),
                         op, exclusive);
        }
      },
      false);
}

void ProcessGroup::scan(ConstBufferView input, BufferView output, ReduceOp op,
                        const CollectiveOptions& options) {
  scan_impl(impl_->comm, input, output, op, options, false);
}
void ProcessGroup::exscan(ConstBufferView input, BufferView output, ReduceOp op,
                          const CollectiveOptions& options) {
  scan_impl(impl_->comm, input, output, op, options, true);
}

}  // namespace weft

// weft::ProcessGroup — a set of ranks that communicate: the public face of weft.
//
// Contract: every call checks its arguments and throws weft::Error(kInvalidArgument) before
// anything is sent. Blocking calls run on the caller's thread; i* calls return a Work.
// A ProcessGroup is thread-safe, but operations issued concurrently from several threads have
// no defined order among themselves: issue them from one thread when order matters. A group's
// collectives never run two at once on a rank: each rank numbers them in the order it runs
// them, and the calls of one number pair up across ranks (a mismatch error when they differ).
// Small blocking collectives cost least from one thread: the first one issued from a second
// thread costs a remote memory barrier once, and every later one an atomic exchange.
// Every wait is bounded by timeout(): a stuck peer is reported by rank, never a silent hang.
// Point-to-point messages between two ranks with the same tag arrive in the order sent.
// Destroying the last handle shuts the group down: queued sends are flushed, peers are told
// goodbye, and no thread, socket or file is left behind.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "weft/buffer.h"
#include "weft/export.h"
#include "weft/p2p_op.h"
#include "weft/reduce_op.h"
#include "weft/work.h"

namespace weft {

// Options every collective takes.
struct CollectiveOptions {
  // Forces an algorithm by name ("ring", "recursive_doubling", "rabenseifner", "naive",
  // "binomial", "scatter_allgather", "bruck", "pairwise", "dissemination"; see
  // docs/algorithms.md). Empty: WEFT_ALGO if set, else the selector's choice.
  std::string algorithm;
  // Bytes per pipelined segment of algorithms that split messages; 0: the default (1 MiB).
  // Tests make it tiny so that multi-segment paths run on small data.
  std::size_t segment_bytes = 0;
  // Bounds this call's waits instead of the group's timeout(); 0: the group's.
  std::chrono::milliseconds timeout{0};
};

class WEFT_API ProcessGroup {
 public:
  // What the library keeps of a group: made by init_process_group, new_group and split.
  class Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  const std::string& name() const;
  std::chrono::milliseconds timeout() const;

  // --- point to point -------------------------------------------------------------------
  // The receiver's buffer must have the same dtype and count as the sender's.
  void send(ConstBufferView data, int dst, int tag = 0);
  // Returns the rank the message came from (useful with kAnySource).
  int recv(BufferView data, int src = kAnySource, int tag = 0);
  std::shared_ptr<Work> isend(ConstBufferView data, int dst, int tag = 0);
  std::shared_ptr<Work> irecv(BufferView data, int src = kAnySource, int tag = 0);
  // Posts every op (all receives first, so that pairs of ranks exchanging do not deadlock)
  // and returns one Work per op, in the order given.
  std::vector<std::shared_ptr<Work>> batch_isend_irecv(const std::vector<P2POp>& ops);

  // --- collectives ----------------------------------------------------------------------
  // Every member calls the same collectives in the same order with matching arguments; a rank
  // that calls something else gets (and causes on the others) a kMismatch error saying what
  // each side called. The i* forms return a Work and run on the group's worker thread in the
  // order issued. Output and input may be the same memory where torch allows it (in place).

  // broadcast, all_reduce and reduce come in place (one buffer) and out of place (as MPI and
  // NCCL: the result goes to `output` and `input` is only read; passing the same buffer as
  // both is the in-place call, and buffers that partly overlap are refused).

  void broadcast(BufferView data, int root, const CollectiveOptions& options = {});
  std::shared_ptr<Work> ibroadcast(BufferView data, int root,
                                   const CollectiveOptions& options = {});
  // root's input lands in every rank's output; input is read on root only (others may pass
  // an empty one).
  void broadcast(ConstBufferView input, BufferView output, int root,
                 const CollectiveOptions& options = {});
  std::shared_ptr<Work> ibroadcast(ConstBufferView input, BufferView output, int root,
                                   const CollectiveOptions& options = {});

  // In place: every rank's data becomes the reduction of all.
  void all_reduce(BufferView data, ReduceOp op = ReduceOp::kSum,
                  const CollectiveOptions& options = {});
  std::shared_ptr<Work> iall_reduce(BufferView data, ReduceOp op = ReduceOp::kSum,
                                    const CollectiveOptions& options = {});
  // Every rank's output becomes the reduction of all inputs.
  void all_reduce(ConstBufferView input, BufferView output, ReduceOp op = ReduceOp::kSum,
                  const CollectiveOptions& options = {});
  std::shared_ptr<Work> iall_reduce(ConstBufferView input, BufferView output,
                                    ReduceOp op = ReduceOp::kSum,
                                    const CollectiveOptions& options = {});

  // The reduction lands in root's data; the others' data is left unchanged.
  void reduce(BufferView data, int root, ReduceOp op = ReduceOp::kSum,
              const CollectiveOptions& options = {});
  std::shared_ptr<Work> ireduce(BufferView data, int root, ReduceOp op = ReduceOp::kSum,
                                const CollectiveOptions& options = {});
  // The reduction of all inputs lands in root's output. Elsewhere output holds no result:
  // pass an empty one (weft then reduces from a private copy of the input) or one of the
  // input's size, which weft uses as scratch space.
  void reduce(ConstBufferView input, BufferView output, int root, ReduceOp op = ReduceOp::kSum,
              const CollectiveOptions& options = {});
  std::shared_ptr<Work> ireduce(ConstBufferView input, BufferView output, int root,
                                ReduceOp op = ReduceOp::kSum,
                                const CollectiveOptions& options = {});

  // all_gather_into_tensor: output holds size() x input.count() elements, rank by rank. input
  // may be output's own slice for this rank (in place).
  void all_gather(ConstBufferView input, BufferView output, const CollectiveOptions& options = {});
  std::shared_ptr<Work> iall_gather(ConstBufferView input, BufferView output,
                                    const CollectiveOptions& options = {});
  // List form; outputs[r] receives rank r's input, and sizes may differ by rank (uneven).
  void all_gather(ConstBufferView input, const std::vector<BufferView>& outputs,
                  const CollectiveOptions& options = {});
  std::shared_ptr<Work> iall_gather(ConstBufferView input, const std::vector<BufferView>& outputs,
                                    const CollectiveOptions& options = {});

  // outputs (root only: others pass {}) receive every rank's input; every rank's input has
  // the same size (as torch requires; all_gather's list form takes uneven sizes).
  void gather(ConstBufferView input, const std::vector<BufferView>& outputs, int root,
              const CollectiveOptions& options = {});
  std::shared_ptr<Work> igather(ConstBufferView input, const std::vector<BufferView>& outputs,
                                int root, const CollectiveOptions& options = {});

  // inputs (root only: others pass {}) are dealt out, inputs[r] to rank r; all the same size.
  void scatter(const std::vector<ConstBufferView>& inputs, BufferView output, int root,
               const CollectiveOptions& options = {});
  std::shared_ptr<Work> iscatter(const std::vector<ConstBufferView>& inputs, BufferView output,
                                 int root, const CollectiveOptions& options = {});

  // reduce_scatter_tensor: input holds size() x output.count() elements; output receives the
  // reduction of every rank's block number rank().
  void reduce_scatter(ConstBufferView input, BufferView output, ReduceOp op = ReduceOp::kSum,
                      const CollectiveOptions& options = {});
  std::shared_ptr<Work> ireduce_scatter(ConstBufferView input, BufferView output,
                                        ReduceOp op = ReduceOp::kSum,
                                        const CollectiveOptions& options = {});
  // List form: inputs[r] is this rank's contribution to rank r; sizes may differ by r.
  void reduce_scatter(const std::vector<ConstBufferView>& inputs, BufferView output,
                      ReduceOp op = ReduceOp::kSum, const CollectiveOptions& options = {});
  std::shared_ptr<Work> ireduce_scatter(const std::vector<ConstBufferView>& inputs,
                                        BufferView output, ReduceOp op = ReduceOp::kSum,
                                        const CollectiveOptions& options = {});

  // all_to_all_single. Without splits, input and output hold size() equal blocks; with
  // splits (element counts per peer; an empty list means equal blocks) they may differ by peer:
  // input_splits[r] elements go to rank r, output_splits[r] come from rank r.
  void all_to_all(ConstBufferView input, BufferView output,
                  const std::vector<std::size_t>& input_splits = {},
                  const std::vector<std::size_t>& output_splits = {},
                  const CollectiveOptions& options = {});
  std::shared_ptr<Work> iall_to_all(ConstBufferView input, BufferView output,
                                    const std::vector<std::size_t>& input_splits = {},
                                    const std::vector<std::size_t>& output_splits = {},
                                    const CollectiveOptions& options = {});
  // List form: inputs[r] goes to rank r, outputs[r] comes from rank r.
  void all_to_all(const std::vector<ConstBufferView>& inputs,
                  const std::vector<BufferView>& outputs, const CollectiveOptions& options = {});
  std::shared_ptr<Work> iall_to_all(const std::vector<ConstBufferView>& inputs,
                                    const std::vector<BufferView>& outputs,
                                    const CollectiveOptions& options = {});

  void barrier(const CollectiveOptions& options = {});
  std::shared_ptr<Work> ibarrier(const CollectiveOptions& options = {});

  // MPI_Scan / MPI_Exscan: rank r gets the reduction of ranks 0..r (scan) or 0..r-1 (exscan;
  // rank 0's output is left untouched).
  void scan(ConstBufferView input, BufferView output, ReduceOp op = ReduceOp::kSum,
            const CollectiveOptions& options = {});
  void exscan(ConstBufferView input, BufferView output, ReduceOp op = ReduceOp::kSum,
              const CollectiveOptions& options = {});

  // --- groups ---------------------------------------------------------------------------
  // Collective over this group: every member calls it with the same ranks (of this group).
  // Returns the new group on its members and nullptr on the others. `timeout` bounds the new
  // group's waits (0: this group's timeout()), as torch's new_group(timeout=).
  std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks,
                                          std::chrono::milliseconds timeout = {});
  // MPI_Comm_split: members with the same color form a group, ordered by (key, rank);
  // color < 0 joins none and gets nullptr. Collective over this group.
  std::shared_ptr<ProcessGroup> split(int color, int key = 0,
                                      std::chrono::milliseconds timeout = {});

  // Fails every pending and future operation of this group on this rank and tells the peers,
  // whose pending operations of this group fail too.
  void abort(const std::string& reason);

  // After a failure (or at any time), the members still alive continue in a smaller group, as
  // ULFM's MPI_Comm_shrink: every surviving member calls it, and each gets a new group of
  // exactly the members the survivors agreed on, ranked in this group's order. This group is
  // aborted first (its pending operations fail with kAborted, here and on its members). A
  // member is left out when a survivor's transport knows it died or left, or when it has not
  // called shrink within `timeout` (0: this group's timeout()); it then gets
  // Error(kAborted) saying it was left out. With nobody dead and everyone calling, the new
  // group holds every member. Thread-safe; call it from one thread per member.
  std::shared_ptr<ProcessGroup> shrink(std::chrono::milliseconds timeout = {});

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft

#include "weft/process_group.h"

#include <memory>
#include <utility>

#include "api/argument_checks.h"
#include "api/process_group_impl.h"
#include "core/communicator.h"
#include "core/request_work.h"
#include "util/block_recycler.h"

namespace weft {

namespace {

core::OpSignature p2p_signature(DType dtype, std::size_t count) {
  core::OpSignature signature;
  signature.kind = core::OpKind::kPointToPoint;
  signature.dtype = dtype;
  signature.count = count;
  return signature;
}

core::OpStart p2p_start(const char* op, int peer, ConstBufferView data) {
  core::OpStart what;
  what.op = op;
  what.bytes = static_cast<int64_t>(data.bytes());
  what.dtype = data.dtype();
  what.peer = peer;
  return what;
}

// A point-to-point call makes one Work: recycled, as its request is (transport::make_request).
template <class... Args>
std::shared_ptr<Work> make_request_work(Args&&... args) {
  return std::allocate_shared<core::RequestWork>(util::RecyclingAllocator<core::RequestWork>(),
                                                 std::forward<Args>(args)...);
}

}  // namespace

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->comm->rank(); }
int ProcessGroup::size() const { return impl_->comm->size(); }
const std::string& ProcessGroup::name() const { return impl_->comm->name(); }
std::chrono::milliseconds ProcessGroup::timeout() const { return impl_->comm->timeout(); }

std::shared_ptr<Work> ProcessGroup::isend(ConstBufferView data, int dst, int tag) {
  api::check_peer(*impl_->comm, dst, "send", /*any_allowed=*/false);
  api::check_buffer(*impl_->comm, data.data(), data.count(), "send", "the send buffer");
  api::check_tag(*impl_->comm, tag, "send");
  core::OpInfo info{"send", dst, static_cast<int64_t>(data.bytes())};
  impl_->comm->check_not_aborted(info);
  auto token = impl_->comm->recorder().begin(p2p_start("send", dst, data));
  auto request =
      impl_->comm->post_send(core::Channel::kPointToPoint, dst, static_cast<uint64_t>(tag),
                             p2p_signature(data.dtype(), data.count()), data.data(), data.bytes());
  return make_request_work(impl_->comm, std::move(request), info, token);
}

std::shared_ptr<Work> ProcessGroup::irecv(BufferView data, int src, int tag) {
  api::check_peer(*impl_->comm, src, "recv", /*any_allowed=*/true);
  api::check_buffer(*impl_->comm, data.data(), data.count(), "recv", "the receive buffer");
  api::check_tag(*impl_->comm, tag, "recv");
  core::OpInfo info{"recv", src, static_cast<int64_t>(data.bytes())};
  impl_->comm->check_not_aborted(info);
  auto token = impl_->comm->recorder().begin(p2p_start("recv", src, data));
  auto request =
      impl_->comm->post_recv(core::Channel::kPointToPoint, src, static_cast<uint64_t>(tag),
                             p2p_signature(data.dtype(), data.count()), data.data(), data.bytes());
  return make_request_work(impl_->comm, std::move(request), info, token);
}

void ProcessGroup::send(ConstBufferView data, int dst, int tag) { isend(data, dst, tag)->wait(); }

int ProcessGroup::recv(BufferView data, int src, int tag) {
  auto work = irecv(data, src, tag);
  work->wait();
  return work->source_rank();
}

std::vector<std::shared_ptr<Work>> ProcessGroup::batch_isend_irecv(const std::vector<P2POp>& ops) {
  // Check everything before posting anything.
  for (const P2POp& op : ops) {
    bool is_send = op.kind == P2POp::Kind::kSend;
    const char* name = is_send ? "send" : "recv";
    api::check_peer(*impl_->comm, op.peer, name, /*any_allowed=*/!is_send);
    api::check_buffer(*impl_->comm, op.buffer.data(), op.buffer.count(), name, "a batch buffer");
    api::check_tag(*impl_->comm, op.tag, name);
  }
  std::vector<std::shared_ptr<Work>> works(ops.size());
  for (int pass = 0; pass < 2; ++pass) {
    auto kind = pass == 0 ? P2POp::Kind::kRecv : P2POp::Kind::kSend;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != kind) continue;
      works[i] = kind == P2POp::Kind::kRecv ? irecv(ops[i].buffer, ops[i].peer, ops[i].tag)
                                            : isend(ops[i].buffer, ops[i].peer, ops[i].tag);
    }
  }
  return works;
}

void ProcessGroup::abort(const std::string& reason) { impl_->comm->abort(reason); }

}  // namespace weft

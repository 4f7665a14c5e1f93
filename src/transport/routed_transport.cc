#include "transport/routed_transport.h"

#include "util/log.h"

namespace weft::transport {

RoutedTransport::RoutedTransport(std::unique_ptr<TcpTransport> tcp,
                                 std::unique_ptr<ShmTransport> shm)
    : tcp_(std::move(tcp)),
      shm_(std::move(shm)),
      watched_(new std::atomic<bool>[tcp_->world_size()]()) {
  if (!shm_) return;
  ShmTransport* shm_path = shm_.get();
  tcp_->set_peer_leaving_hook([shm_path](int peer, const std::shared_ptr<const Error>& error) {
    shm_path->drain_from(peer);
    shm_path->fail_peer(peer, error);
  });
}

RoutedTransport::~RoutedTransport() {
  shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(2));
}

void RoutedTransport::post_send(const RequestPtr& request) {
  int peer = request->peer;
  if (!via_shm(peer)) {
    tcp_->post_send(request);
    return;
  }
  // Shared memory says nothing when the peer dies; its TCP connection does.
  if (!watched_[peer].load(std::memory_order_relaxed) && !watched_[peer].exchange(true)) {
    tcp_->connect_to(peer);
  }
  shm_->post_send(request);
}

bool RoutedTransport::cancel(Request& request, std::shared_ptr<const Error> reason) {
  if (request.kind == Request::Kind::kSend && via_shm(request.peer)) {
    return shm_->cancel(request, std::move(reason));
  }
  return tcp_->cancel(request, std::move(reason));
}

bool RoutedTransport::poll(Request& request) {
  if (shm_) shm_->progress();
  // A socket read per poll would slow a same-host wait down for nothing.
  return !via_shm(request.peer) && tcp_->poll(request);
}

void RoutedTransport::start_polling(const Request& request) {
  if (shm_) shm_->start_polling();
  if (!via_shm(request.peer)) tcp_->start_polling(request);
}

void RoutedTransport::stop_polling(const Request& request) {
  if (!via_shm(request.peer)) tcp_->stop_polling(request);
  if (shm_) shm_->stop_polling();
}

bool RoutedTransport::completed_by_polling(const Request& request) const {
  if (!shm_) return false;
  return request.peer == kAnyPeer ? shm_->has_local_peers() : via_shm(request.peer);
}

void RoutedTransport::log_paths() const {
  int me = tcp_->rank();
  for (int peer = 0; peer < tcp_->world_size(); ++peer) {
    if (peer == me) continue;
    // Same-host peers keep a TCP connection too (it reports their exit): name its address.
    util::log_info(util::Subsys::kTransport, [&] {
      const std::string address = tcp_->peer_address(peer);
      std::string path = via_shm(peer)     ? "shm (same host; its TCP address " + address + ")"
                         : address.empty() ? std::string("tcp (its address read when first used)")
                                           : "tcp at " + address;
      return "rank " + std::to_string(me) + " reaches rank " + std::to_string(peer) + " through " +
             path;
    });
  }
}

void RoutedTransport::shutdown(std::chrono::steady_clock::time_point flush_deadline) {
  // What is queued in shared memory goes before TCP says goodbye: a peer drains our ring when
  // it hears we left.
  if (shm_) shm_->shutdown(flush_deadline);
  tcp_->shutdown(flush_deadline);
}

}  // namespace weft::transport

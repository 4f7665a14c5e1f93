// RoutedTransport — the Transport a process uses: for each peer the first path that reaches
// it, shared memory for ranks of this host (when it could be mapped), TCP for the others.
//
// Receives are posted once, in TCP's matcher, which every path delivers into (MessageSink):
// a receive from anyone takes the first message from any path. TCP also keeps one connection
// to each same-host peer we talk to, so that a death or a departure is noticed the same way
// for both paths: what the peer had put in shared memory is delivered first, then what is
// pending with it fails.
// Thread-safety: as Transport.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/transport.h"

namespace weft::transport {

class RoutedTransport final : public Transport {
 public:
  // `shm` may be null (WEFT_TRANSPORT=tcp, or shared memory unavailable).
  RoutedTransport(std::unique_ptr<TcpTransport> tcp, std::unique_ptr<ShmTransport> shm);
  ~RoutedTransport() override;

  TcpTransport& tcp() { return *tcp_; }
  ShmTransport* shm() { return shm_.get(); }

  int rank() const override { return tcp_->rank(); }
  int world_size() const override { return tcp_->world_size(); }
  void post_send(const RequestPtr& request) override;
  void post_recv(const RequestPtr& request) override { tcp_->post_recv(request); }
  bool cancel(Request& request, std::shared_ptr<const Error> reason) override;
  bool poll(Request& request) override;
  void start_polling(const Request& request) override;
  void stop_polling(const Request& request) override;
  bool completed_by_polling(const Request& request) const override;
  bool pollers_have_own_cores() const override { return shm_ && shm_->ranks_have_own_cores(); }
  void abort_context(uint64_t context, std::shared_ptr<const Error> reason) override {
    tcp_->abort_context(context, std::move(reason));
  }
  void set_listener(TransportListener listener) override {
    tcp_->set_listener(std::move(listener));
  }
  std::string peer_address(int peer) const override { return tcp_->peer_address(peer); }
  // TCP hears of every peer's end, same-host peers' too (see above).
  bool peer_failed(int peer) const override { return tcp_->peer_failed(peer); }
  void probe_peer(int peer) override { tcp_->probe_peer(peer); }
  // Logs (INFO, transport) the path to each peer; once the rendezvous has set them.
  void log_paths() const;
  void shutdown(std::chrono::steady_clock::time_point flush_deadline) override;

 private:
  bool via_shm(int peer) const { return shm_ && peer != tcp_->rank() && shm_->reaches(peer); }

  std::unique_ptr<TcpTransport> tcp_;
  std::unique_ptr<ShmTransport> shm_;
  std::unique_ptr<std::atomic<bool>[]> watched_;  // a TCP connection to the peer exists
};

}  // namespace weft::transport

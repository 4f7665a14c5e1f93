// OfiEndpoint — one libfabric RDM endpoint with its fabric, domain, address vector and
// completion queue: what the ofi path (ofi_path.h) sends and receives through. It owns the
// libfabric objects and closes them in order; it knows nothing of weft's messages.
//
// Opening picks a provider: WEFT_OFI_PROVIDER names one (libfabric's names: "verbs;ofi_rxm",
// "tcp;ofi_rxm", "efa", "cxi", ...), else the first that libfabric lists for a reliable-datagram
// endpoint with messages in send order (FI_ORDER_SAS), thread-safe, and needing no registration
// of local buffers (FI_MR_LOCAL is not offered: NOTE(ofi-registration) in docs/transport.md),
// bound to `source_address` for providers that run over IP.
//
// Thread-safety: the domain is opened FI_THREAD_SAFE; every method may be called from any
// thread. send/receive/read_completions are libfabric's calls, one for one.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transport/ofi/ofi_library.h"

namespace weft::transport {

struct OfiEndpointOptions {
  std::string provider;        // WEFT_OFI_PROVIDER; empty: the first that fits
  std::string source_address;  // numeric IP to bind IP providers to; empty: libfabric's choice
  bool fabric_only = false;    // refuse socket emulations (tcp, udp, sockets, net, shm)
};

class OfiEndpoint {
 public:
  // Throws weft::Error(kSystem) naming the provider and libfabric's words when none fits.
  explicit OfiEndpoint(const OfiEndpointOptions& options);
  ~OfiEndpoint();
  OfiEndpoint(const OfiEndpoint&) = delete;
  OfiEndpoint& operator=(const OfiEndpoint&) = delete;

  const std::string& provider() const { return provider_; }
  // Whether the provider runs over sockets (tcp, udp, sockets, net) or shared memory (shm)
  // rather than a fabric's own hardware.
  static bool is_socket_emulation(const std::string& provider);
  // This endpoint's address, as libfabric gives it (opaque bytes).
  std::vector<uint8_t> name() const;
  // Adds a peer's address; returns its handle. Throws weft::Error(kSystem).
  fi_addr_t insert_address(const std::vector<uint8_t>& name);

  // fi_sendmsg of `iov` to `to`, with `context` (an fi_context2 first in the caller's struct).
  // Returns 0, -FI_EAGAIN (progress the queue and try again) or another -FI_* error.
  ssize_t send(const struct iovec* iov, std::size_t count, fi_addr_t to, void* context);
  // fi_recv into `buffer`, from anyone.
  ssize_t receive(void* buffer, std::size_t bytes, void* context);
  // fi_cq_read / fi_cq_sread (timeout_ms > 0): completions, 0 or -FI_EAGAIN for none,
  // -FI_EAVAIL when an error completion waits (read_error).
  ssize_t read_completions(struct fi_cq_msg_entry* entries, std::size_t count, int timeout_ms);
  // The waiting error completion; its text in *text.
  bool read_error(struct fi_cq_err_entry* entry, std::string* text);
  // Whether sread can wait for completions (else the caller sleeps between reads).
  bool can_wait() const { return can_wait_; }

  static std::string error_text(int code);

 private:
  void close();

  const OfiLibrary& library_;
  std::string provider_;
  struct fi_info* info_ = nullptr;
  struct fid_fabric* fabric_ = nullptr;
  struct fid_domain* domain_ = nullptr;
  struct fid_cq* cq_ = nullptr;
  struct fid_av* av_ = nullptr;
  struct fid_ep* ep_ = nullptr;
  bool can_wait_ = false;
};

}  // namespace weft::transport

#include "transport/ofi/ofi_endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <cstring>

#include "transport/ofi/ofi_library.h"
#include "weft/error.h"

namespace weft::transport {

namespace {

constexpr uint32_t kFabricVersion = FI_VERSION(1, 9);

[[noreturn]] void fail(const std::string& what, int code) {
  throw Error(ErrorCode::kSystem, "ofi: " + what + ": " + OfiEndpoint::error_text(code));
}

void check(int code, const std::string& what) {
  if (code != 0) fail(what, code);
}

// The core provider of a layered name: "tcp" of "tcp;ofi_rxm".
std::string core_provider(const std::string& provider) {
  return provider.substr(0, provider.find(';'));
}

}  // namespace

std::string OfiEndpoint::error_text(int code) {
  const int positive = code < 0 ? -code : code;
  if (const OfiLibrary* library = ofi_library_if_loaded()) return library->strerror(positive);
  return "libfabric error " + std::to_string(positive);
}

bool OfiEndpoint::is_socket_emulation(const std::string& provider) {
  const std::string core = core_provider(provider);
  return core == "tcp" || core == "udp" || core == "sockets" || core == "net" || core == "shm";
}

OfiEndpoint::OfiEndpoint(const OfiEndpointOptions& options) : library_(ofi_library()) {
  struct fi_info* hints = library_.dupinfo(nullptr);
  if (!hints) throw Error(ErrorCode::kSystem, "ofi: fi_allocinfo failed");
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->domain_attr->mr_mode = 0;
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  // A send completes once its data is in the receiver's buffer, not merely out of ours: a rank
  // that leaves after its last send completed must not leave that message behind in the
  // provider (its peer hears of its departure over TCP and drains this path then).
  hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  if (!options.provider.empty()) hints->fabric_attr->prov_name = strdup(options.provider.c_str());
  struct fi_info* list = nullptr;
  const char* node = options.source_address.empty() ? nullptr : options.source_address.c_str();
  int code = library_.getinfo(kFabricVersion, node, nullptr, node ? FI_SOURCE : 0, hints, &list);
  if (code != 0 && node) {  // a provider that is not over IP takes no IP address
    code = library_.getinfo(kFabricVersion, nullptr, nullptr, 0, hints, &list);
  }
  library_.freeinfo(hints);
  const std::string which =
      options.provider.empty() ? std::string("any provider") : "provider " + options.provider;
  if (code != 0) fail("no " + which + " offers reliable ordered messages here", code);
  struct fi_info* chosen = nullptr;
  for (struct fi_info* info = list; info; info = info->next) {
    if (options.fabric_only && is_socket_emulation(info->fabric_attr->prov_name)) continue;
    chosen = info;
    break;
  }
  if (!chosen) {
    library_.freeinfo(list);
    throw Error(ErrorCode::kSystem, "ofi: no fabric provider (verbs, efa, cxi, psm3, opx) here");
  }
  info_ = library_.dupinfo(chosen);
  library_.freeinfo(list);
  provider_ = info_->fabric_attr->prov_name;
  try {
    check(library_.fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric (" + provider_ + ")");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain (" + provider_ + ")");
    struct fi_cq_attr cq_attr {};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = FI_WAIT_UNSPEC;
    if (fi_cq_open(domain_, &cq_attr, &cq_, nullptr) == 0) {
      can_wait_ = true;
    } else {
      cq_attr.wait_obj = FI_WAIT_NONE;
      check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open (" + provider_ + ")");
    }
    struct fi_av_attr av_attr {};
    av_attr.type = FI_AV_TABLE;
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open (" + provider_ + ")");
    check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint (" + provider_ + ")");
    check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind av");
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind cq");
    check(fi_enable(ep_), "fi_enable (" + provider_ + ")");
  } catch (...) {
    close();
    throw;
  }
}

OfiEndpoint::~OfiEndpoint() { close(); }

void OfiEndpoint::close() {
  if (ep_) fi_close(&ep_->fid);
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  if (info_) library_.freeinfo(info_);
  ep_ = nullptr;
  av_ = nullptr;
  cq_ = nullptr;
  domain_ = nullptr;
  fabric_ = nullptr;
  info_ = nullptr;
}

std::vector<uint8_t> OfiEndpoint::name() const {
  std::vector<uint8_t> name(256);
  std::size_t length = name.size();
  int code = fi_getname(&ep_->fid, name.data(), &length);
  if (code == -FI_ETOOSMALL) {
    name.resize(length);
    code = fi_getname(&ep_->fid, name.data(), &length);
  }
  check(code, "fi_getname");
  name.resize(length);
  return name;
}

fi_addr_t OfiEndpoint::insert_address(const std::vector<uint8_t>& name) {
  fi_addr_t address = FI_ADDR_UNSPEC;
  int inserted = fi_av_insert(av_, name.data(), 1, &address, 0, nullptr);
  if (inserted != 1) fail("fi_av_insert", inserted < 0 ? inserted : -FI_EINVAL);
  return address;
}

ssize_t OfiEndpoint::send(const struct iovec* iov, std::size_t count, fi_addr_t to, void* context) {
  struct fi_msg message {};
  message.msg_iov = iov;
  message.iov_count = count;
  message.addr = to;
  message.context = context;
  return fi_sendmsg(ep_, &message, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

ssize_t OfiEndpoint::receive(void* buffer, std::size_t bytes, void* context) {
  return fi_recv(ep_, buffer, bytes, nullptr, FI_ADDR_UNSPEC, context);
}

ssize_t OfiEndpoint::read_completions(struct fi_cq_msg_entry* entries, std::size_t count,
                                      int timeout_ms) {
  if (timeout_ms > 0 && can_wait_) return fi_cq_sread(cq_, entries, count, nullptr, timeout_ms);
  return fi_cq_read(cq_, entries, count);
}

bool OfiEndpoint::read_error(struct fi_cq_err_entry* entry, std::string* text) {
  *entry = {};
  if (fi_cq_readerr(cq_, entry, 0) != 1) return false;
  const char* detail = fi_cq_strerror(cq_, entry->prov_errno, entry->err_data, nullptr, 0);
  *text = error_text(entry->err);
  if (detail && *detail) *text += " (" + std::string(detail) + ")";
  return true;
}

}  // namespace weft::transport

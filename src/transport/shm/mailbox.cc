#include "transport/shm/mailbox.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "util/futex.h"
#include "util/hmac.h"
#include "weft/error.h"

namespace weft::transport {

namespace {

// Changed with the header: the token became its digest.
constexpr uint64_t kMailboxMagic = 0x32786f626c69614dull;  // "Mailbox2"
constexpr std::size_t kHeaderBytes = 4096;
static_assert(sizeof(MailboxHeader) <= kHeaderBytes);

util::Digest mailbox_digest(const std::string& token) {
  static const std::string kLabel = "weft-shm-mailbox";
  return util::hmac_sha256(token, std::vector<uint8_t>(kLabel.begin(), kLabel.end()));
}

bool same_token(const MailboxHeader& header, const std::string& token) {
  util::Digest held;
  std::memcpy(held.data(), header.token_digest, held.size());
  return util::same_digest(held, mailbox_digest(token));
}

}  // namespace

std::string MailboxAddress::to_string() const {
  return "shm:" + std::to_string(pid) + ":" + std::to_string(fd) + ":" + std::to_string(address);
}

bool MailboxAddress::parse(const std::string& text, MailboxAddress* out) {
  long long pid = 0, fd = 0;
  unsigned long long address = 0;
  if (std::sscanf(text.c_str(), "shm:%lld:%lld:%llu", &pid, &fd, &address) != 3) return false;
  out->pid = static_cast<pid_t>(pid);
  out->fd = static_cast<int>(fd);
  out->address = address;
  return pid > 0 && fd >= 0;
}

std::size_t Mailbox::bytes_for(int world_size, std::size_t ring_capacity) {
  return kHeaderBytes +
         static_cast<std::size_t>(world_size) * (sizeof(RingControl) + ring_capacity);
}

Mailbox Mailbox::create(int world_size, std::size_t ring_capacity, const std::string& job_token) {
  Mailbox mailbox;
  mailbox.segment_ = SharedSegment::create("weft-mailbox", bytes_for(world_size, ring_capacity));
  mailbox.header_ = new (mailbox.segment_.base()) MailboxHeader();
  mailbox.header_->world_size = world_size;
  mailbox.header_->ring_capacity = static_cast<uint32_t>(ring_capacity);
  mailbox.header_->pid = getpid();
  util::Digest digest = mailbox_digest(job_token);
  std::memcpy(mailbox.header_->token_digest, digest.data(), digest.size());
  mailbox.header_->magic = kMailboxMagic;
  mailbox.ring_capacity_ = ring_capacity;
  mailbox.owner_pid_ = getpid();
  return mailbox;
}

Mailbox Mailbox::attach(const MailboxAddress& address, int world_size, std::size_t ring_capacity,
                        const std::string& job_token) {
  Mailbox mailbox;
  mailbox.segment_ =
      SharedSegment::attach(address.pid, address.fd, bytes_for(world_size, ring_capacity));
  mailbox.header_ = static_cast<MailboxHeader*>(mailbox.segment_.base());
  if (mailbox.header_->magic != kMailboxMagic || mailbox.header_->world_size != world_size ||
      mailbox.header_->ring_capacity != ring_capacity) {
    throw Error(ErrorCode::kInternal, "descriptor " + std::to_string(address.fd) + " of process " +
                                          std::to_string(address.pid) +
                                          " is not a weft mailbox of this job");
  }
  if (!same_token(*mailbox.header_, job_token)) {
    throw Error(ErrorCode::kUnauthorized, "the mailbox of process " + std::to_string(address.pid) +
                                              " belongs to another job (job token mismatch)");
  }
  mailbox.ring_capacity_ = ring_capacity;
  mailbox.owner_pid_ = address.pid;
  return mailbox;
}

MailboxAddress Mailbox::address() const {
  MailboxAddress address;
  address.pid = getpid();
  address.fd = segment_.fd();
  address.address = reinterpret_cast<uint64_t>(header_);
  return address;
}

ShmRing Mailbox::ring(int sender) const {
  auto* base = reinterpret_cast<uint8_t*>(header_) + kHeaderBytes +
               static_cast<std::size_t>(sender) * (sizeof(RingControl) + ring_capacity_);
  return ShmRing(base, ring_capacity_);
}

void Mailbox::notify() const {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header_->pollers.load(std::memory_order_seq_cst) != 0) return;
  if (header_->sleeping.load(std::memory_order_seq_cst) == 0) return;
  wake();
}

void Mailbox::wake() const {
  header_->doorbell.fetch_add(1, std::memory_order_seq_cst);
  util::futex_wake_all_shared(header_->doorbell);
}

}  // namespace weft::transport

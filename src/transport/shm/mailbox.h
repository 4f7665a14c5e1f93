// Mailbox — one process's (one rank's) shared-memory inbox: a ring per possible sender, the
// table through which receivers report single-copy transfers done, and the words that decide
// whether a sender must wake the owner.
//
// The owner creates it (a memfd: nothing to clean up after any exit) before the rendezvous and
// publishes "pid:fd:address"; same-host peers attach through /proc/<pid>/fd/<fd>. Rings are
// indexed by world rank; pages of rings nobody uses are never touched, so they cost no memory.
//
// Waking: the owner's threads that spin on their requests count themselves in `pollers`; its
// progress thread says when it sleeps (`sleeping`) on the `doorbell` futex. A writer rings the
// doorbell only when nobody polls and the progress thread sleeps: a busy receiver costs the
// sender no system call. Both sides order their store before their load (seq_cst), so a
// record is never left unseen.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "transport/shm/shared_segment.h"
#include "transport/shm/shm_ring.h"
#include "util/hmac.h"

namespace weft::transport {

// A single-copy offer's slot in the sender's mailbox: generation << 2 | state. The generation
// stops a stale record from acting on a slot that was reused.
enum class OfferState : uint32_t { kFree = 0, kPending = 1, kPulling = 2, kDone = 3 };
inline constexpr int kOfferSlots = 64;

struct alignas(64) MailboxHeader {
  uint64_t magic;
  int32_t world_size;
  uint32_t ring_capacity;
  int32_t pid;
  uint32_t reserved;
  // HMAC-SHA256(job token, "weft-shm-mailbox"): a mailbox of another job is never written to,
  // and whoever can read the segment does not learn the token.
  uint8_t token_digest[util::kDigestBytes];
  alignas(64) std::atomic<uint32_t> pollers{0};
  std::atomic<uint32_t> sleeping{0};
  std::atomic<uint32_t> doorbell{0};
  alignas(64) std::atomic<uint64_t> offers[kOfferSlots];
};

struct MailboxAddress {
  pid_t pid = 0;
  int fd = -1;
  uint64_t address = 0;  // the mailbox's header in the owner's address space (probing CMA)

  std::string to_string() const;
  // Parses what to_string() wrote; false when the text is not a mailbox address.
  static bool parse(const std::string& text, MailboxAddress* out);
};

class Mailbox {
 public:
  Mailbox() = default;
  static Mailbox create(int world_size, std::size_t ring_capacity, const std::string& job_token);
  // Throws weft::Error(kSystem) when the kernel refuses, kUnauthorized when the mailbox belongs
  // to another job, kInternal when it is not a mailbox of this job's shape.
  static Mailbox attach(const MailboxAddress& address, int world_size, std::size_t ring_capacity,
                        const std::string& job_token);

  bool valid() const { return header_ != nullptr; }
  MailboxAddress address() const;
  MailboxHeader& header() const { return *header_; }
  // The owner's process, as the rendezvous said (not as its header says: the owner can change
  // that, and a single-copy read must go to the process that published the mailbox).
  pid_t owner_pid() const { return owner_pid_; }
  // The ring `sender` writes into.
  ShmRing ring(int sender) const;

  // After writing a record or finishing an offer: wakes the owner if nobody there would
  // otherwise notice.
  void notify() const;
  // Wakes the owner's progress thread unconditionally.
  void wake() const;

 private:
  static std::size_t bytes_for(int world_size, std::size_t ring_capacity);

  SharedSegment segment_;
  MailboxHeader* header_ = nullptr;
  std::size_t ring_capacity_ = 0;
  pid_t owner_pid_ = 0;
};

}  // namespace weft::transport

// The checks of what a member of a same-host group reads from another member's part of the
// group's shared-memory window (coll/shm/all_to_all_header.h, transport/shm/window_records.h), on
// arbitrary bytes, as a buggy or hostile process of the same host can write them. The input:
// the member count (1 byte, 1..64), the size of direct reads (u64), a pid (i32), a poison word
// (u32), then one member's all_to_all header (exactly its size: ASan sees a read past it).
// Properties: no crash; a header the decoder accepts is one an honest member could have written
// (its largest send is its largest piece, no size over 2^47, known flags, "no data in round 0"
// only with direct reads and large pieces), so the rounds it makes a reader run are bounded; an
// accepted address does not wrap; an accepted pid names a process; a poisoner is a member.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "coll/shm/all_to_all_header.h"
#include "seeds.h"
#include "transport/frame_header.h"
#include "transport/shm/window_records.h"

namespace {

using weft::coll::AllToAllHeader;
using weft::fuzz::Bytes;

constexpr std::size_t kPrefix = 1 + 8 + 4 + 4;

template <typename T>
void put(Bytes& bytes, T value) {
  const auto* at = reinterpret_cast<const uint8_t*>(&value);
  bytes.insert(bytes.end(), at, at + sizeof value);
}

// An honest member's header for `p` members sending `piece` bytes to each.
Bytes honest(uint8_t p, uint64_t piece, uint64_t flags, uint64_t direct_from) {
  Bytes input;
  input.push_back(p);
  put(input, direct_from);
  put<int32_t>(input, 4242);
  put<uint32_t>(input, 2);
  const AllToAllHeader header(p);
  Bytes slot(header.bytes());
  header.set_largest(slot.data(), piece);
  header.set_flags(slot.data(), flags);
  for (int d = 0; d < p; ++d) {
    header.set_sends_to(slot.data(), d, piece);
    header.set_address_for(slot.data(), d, 0x7f0000000000u + piece * d);
    header.set_expects_from(slot.data(), d, piece);
  }
  weft::fuzz::append(input, slot);
  return input;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::write_seeds_if_asked({honest(2, 8, 0, 65536),
                                    honest(3, 1 << 20, AllToAllHeader::kKnownFlags, 524288),
                                    honest(8, 0, AllToAllHeader::kCanReadDirectly, 65536)});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kPrefix) return 0;
  const int p = 1 + data[0] % 64;
  uint64_t direct_from;
  int32_t pid;
  uint32_t poisoned;
  std::memcpy(&direct_from, data + 1, sizeof direct_from);
  std::memcpy(&pid, data + 9, sizeof pid);
  std::memcpy(&poisoned, data + 13, sizeof poisoned);

  if (!weft::transport::check_member_pid(pid) && pid <= 0) std::abort();
  const int poisoner = weft::transport::poisoner_of(poisoned, 0x80000000u, p);
  if (poisoner < -1 || poisoner >= p) std::abort();

  const AllToAllHeader header(p);
  if (size - kPrefix < header.bytes()) return 0;
  // Exactly the header's bytes, on the heap: a read past them is an ASan report.
  std::unique_ptr<uint8_t[]> slot(new uint8_t[header.bytes()]);
  std::memcpy(slot.get(), data + kPrefix, header.bytes());
  const weft::coll::AllToAllHeaderView view =
      weft::coll::decode_all_to_all_header(slot.get(), p, direct_from);
  if (view.fault) {
    if (view.fault.field == nullptr || view.fault.to_string().empty()) std::abort();
    return 0;
  }
  uint64_t most = 0;
  for (int d = 0; d < p; ++d) {
    const uint64_t sends = header.sends_to(slot.get(), d);
    if (sends > weft::transport::kLargestMessageBytes) std::abort();
    if (header.expects_from(slot.get(), d) > weft::transport::kLargestMessageBytes) std::abort();
    most = std::max(most, sends);
    const uint64_t address = header.address_for(slot.get(), d);
    if (!weft::coll::check_direct_read_address(address, sends) && sends != 0 &&
        (address == 0 || address + sends < address)) {
      std::abort();
    }
  }
  if (view.largest != most) std::abort();
  if (header.flags(slot.get()) & ~AllToAllHeader::kKnownFlags) std::abort();
  if (view.no_data_in_round_zero && (!view.can_read_directly || view.largest < direct_from)) {
    std::abort();
  }
  // The rounds a reader makes with the smallest region: bounded by 2^47.
  if (view.largest > weft::transport::kLargestMessageBytes) std::abort();
  return 0;
}

#include "writable_memory.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace weft::python {

namespace {

// 0 when the word holding address is writable, else the errno of the probe.
int probe_word(std::uintptr_t address) {
  // FUTEX_WAKE_OP wakes up to 0 waiters of `anchor` and, after atomically applying "+= 0" to the
  // word at uaddr2, up to 0 waiters there. The word is aligned down to 4 bytes: it lies in the
  // same page as the byte, so it has the byte's protection.
  static int anchor = 0;
  auto* word = reinterpret_cast<int*>(address & ~std::uintptr_t{3});
  long result =
      syscall(SYS_futex, &anchor, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 0,
              static_cast<void*>(nullptr), word, FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));
  return result < 0 ? errno : 0;
}

MemoryAccess access_of(int error) {
  if (error == 0) return MemoryAccess::kWritable;
  return error == EFAULT ? MemoryAccess::kNotWritable : MemoryAccess::kUnknown;
}

}  // namespace

MemoryAccess probe_writable(const void* data, std::size_t bytes) {
  if (bytes == 0) return MemoryAccess::kWritable;
  const auto first = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t last = first + (bytes - 1);
  MemoryAccess access = access_of(probe_word(first));
  if (access != MemoryAccess::kWritable) return access;
  // A page holds at least 4 KiB: two bytes within 4 KiB of the same aligned block share a page.
  constexpr std::uintptr_t kSmallestPage = 4096;
  if (first / kSmallestPage == last / kSmallestPage) return access;
  return access_of(probe_word(last));
}

}  // namespace weft::python

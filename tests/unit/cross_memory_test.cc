// Cross-memory attach: a read from this very process copies the bytes, and a probe's answer
// about a process is asked of the kernel once: a later probe of the same process is answered
// from memory, whatever address it names, but an answer about the address is not kept.
#include "transport/shm/cross_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace weft::transport {
namespace {

uint64_t address_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(CrossMemory, AReadCopiesTheBytes) {
  std::vector<uint8_t> theirs(100'000);
  for (std::size_t i = 0; i < theirs.size(); ++i) theirs[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> mine(theirs.size());
  ASSERT_EQ(read_process_memory(getpid(), address_of(theirs.data()), mine.data(), mine.size()), 0);
  EXPECT_EQ(mine, theirs);
}

TEST(CrossMemory, AReadFromABadAddressSaysSo) {
  uint64_t word = 0;
  EXPECT_EQ(read_process_memory(getpid(), 8, &word, sizeof word), EFAULT);
}

TEST(CrossMemory, AProcessIsProbedOnceAndAWrongWordIsNotRemembered) {
  // A child no probe has seen yet, holding a copy of our word at the same address until told.
  static uint64_t word = 0x5eed;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    char byte;
    ssize_t ignored = read(go[0], &byte, 1);
    (void)ignored;
    _exit(0);
  }
  close(go[0]);
  // A probe that names a word the child does not hold: an answer about the address, not kept.
  EXPECT_EQ(probe_process_memory(child, address_of(&word), 0x5eed + 1), EIO);
  EXPECT_EQ(probe_process_memory(child, address_of(&word), 0x5eed), 0);
  // From now on the child's answer is known: no address is read again.
  EXPECT_EQ(probe_process_memory(child, 8, 0x5eed), 0);
  close(go[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
}

TEST(CrossMemory, AProcessThatIsGoneIsRefused) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  uint64_t word = 1;
  EXPECT_EQ(probe_process_memory(child, address_of(&word), 1), ESRCH);
}

}  // namespace
}  // namespace weft::transport

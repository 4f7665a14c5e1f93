// Cross-memory attach (CMA): a receiver copies a large message straight from the sender's
// memory into its own buffer with process_vm_readv — one copy, no staging. The kernel allows
// it between processes of one user unless a policy forbids it (Yama ptrace_scope, a container's
// seccomp filter); a probe at start-up tells which.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace weft::transport {

// Copies `bytes` from `remote` in process `pid` to `local`. Returns 0, or the errno that
// stopped it (ESRCH: the process is gone; EPERM: not allowed; EFAULT: a bad address).
int read_process_memory(pid_t pid, uint64_t remote, void* local, std::size_t bytes);

// Whether this process may read process `pid`'s memory: reads 8 bytes at `remote` and checks
// them against `expected`. Returns 0 or the errno (EIO when the bytes differ).
// The kernel's answer is about this process reading that one, whoever here asks, so it is
// asked once per process: the point-to-point mailboxes and every group's window share it. A
// process is known by its pid and start time (a pid the kernel reuses is probed anew); a
// success or a refusal (EPERM) is remembered, an answer about the address (EFAULT, EIO) is not.
int probe_process_memory(pid_t pid, uint64_t remote, uint64_t expected);

}  // namespace weft::transport

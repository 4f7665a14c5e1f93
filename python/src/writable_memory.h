// Whether this process may write a range of its memory: the check that keeps weft from writing
// results into a read-only mapping (a torch tensor over np.memmap(mode="r") or
// np.load(mmap_mode="r"), which would kill the process with SIGSEGV on a worker thread).
//
// Mechanism: futex(FUTEX_WAKE_OP) on the 4-byte word holding a byte, with the operation "add 0"
// and no waiter to wake. The kernel performs that atomic read-modify-write as the process would,
// so it fails with EFAULT exactly when the page cannot be written (read-only, PROT_NONE,
// unmapped), and otherwise leaves the value unchanged: atomic, so a concurrent writer loses
// nothing. One system call per probe; no signal handler, no /proc parsing.
//
// Limits: protection is per page and this probes the first and the last byte of a range only
// (one probe when they share a page). A single allocation has one protection throughout, so
// this is exact for every buffer made by one allocation or one mmap; a range stitched from
// mappings of different protections, or made read-only in part by mprotect, may pass. Memory
// that is writable but meant to be immutable (a numpy array flagged writeable=False over heap
// memory, np.frombuffer(bytes)) is writable to the kernel: only the owner's flag tells, and
// buffers.h checks it where Python exposes it (the buffer protocol).
// Thread safety: none needed.
#pragma once

#include <cstddef>

namespace weft::python {

enum class MemoryAccess {
  kWritable,     // the probes succeeded
  kNotWritable,  // a probe faulted (EFAULT)
  kUnknown,      // the kernel refused the probe otherwise (a sandbox?): taken as writable
};

// Probes [data, data + bytes); an empty range is writable.
MemoryAccess probe_writable(const void* data, std::size_t bytes);

}  // namespace weft::python

// Copies of large blocks that are written once and not read again soon (a collective's output):
// non-temporal stores write the destination's lines without reading them first and without
// filling the cache with them. glibc's memcpy keeps ordinary stores up to a threshold tied to
// the cache size, which is too high when several processes copy at once and share the cache:
// their large copies are then bound by memory traffic that streaming stores halve.
#pragma once

#include <cstddef>

namespace weft::util {

// Blocks from this size on are streamed; smaller ones are left to memcpy (they may well be
// read again from the cache).
inline constexpr std::size_t kStreamCopyFrom = 256 * 1024;

// A collective whose whole output is at least this large writes it with stream_copy: it would
// not stay in the cache anyway. A smaller one may still be read from the cache, which
// streaming stores bypass (streaming a mid-sized all_gather's output made it slower).
inline constexpr std::size_t kStreamOutputFrom = 8u << 20;

// Copies part of a collective's output of `output_bytes` in all: with stream_copy from
// kStreamOutputFrom, with memcpy below.
void copy_into_output(void* to, const void* from, std::size_t bytes, std::size_t output_bytes);

// memcpy(to, from, bytes) for blocks that do not overlap, with non-temporal stores from the first
// whole cache line of `to` on, whatever the size (x86-64; memcpy elsewhere), ordered before the
// function returns.
void copy_streaming(void* to, const void* from, std::size_t bytes);

// memcpy(to, from, bytes) for blocks that do not overlap; from kStreamCopyFrom bytes on with
// non-temporal stores where the CPU has them (x86-64), ordered before the function returns.
void stream_copy(void* to, const void* from, std::size_t bytes);

}  // namespace weft::util

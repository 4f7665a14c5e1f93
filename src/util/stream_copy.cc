#include "util/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace weft::util {

void copy_streaming(void* to, const void* from, std::size_t bytes) {
#if defined(__x86_64__)
  if (bytes >= 64) {
    auto* out = static_cast<uint8_t*>(to);
    const auto* in = static_cast<const uint8_t*>(from);
    // Streaming stores need an aligned destination: copy up to the next cache line first.
    std::size_t head = (64 - reinterpret_cast<uintptr_t>(out) % 64) % 64;
    std::memcpy(out, in, head);
    out += head;
    in += head;
    bytes -= head;
    std::size_t lines = bytes / 64;
    for (std::size_t i = 0; i < lines; ++i, out += 64, in += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
    }
    // Streaming stores are weakly ordered: whoever learns that we are done must see them.
    _mm_sfence();
    std::memcpy(out, in, bytes % 64);
    return;
  }
#endif
  std::memcpy(to, from, bytes);
}

void stream_copy(void* to, const void* from, std::size_t bytes) {
  // memcpy's pointers must not be null even for no bytes, and an empty buffer's may be.
  if (bytes == 0) return;
  if (bytes >= kStreamCopyFrom) {
    copy_streaming(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

void copy_into_output(void* to, const void* from, std::size_t bytes, std::size_t output_bytes) {
  if (bytes == 0) return;  // as in stream_copy
  if (output_bytes >= kStreamOutputFrom) {
    stream_copy(to, from, bytes);
  } else {
    std::memcpy(to, from, bytes);
  }
}

}  // namespace weft::util

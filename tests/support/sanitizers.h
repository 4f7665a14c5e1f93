// Which sanitizer this test binary is built with (WEFT_SANITIZE, docs/RELIABILITY.md,
// "Sanitizers"), for the few tests that check behaviour a sanitizer replaces with its own.
#pragma once

namespace weft::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace weft::testing

// WEFT_API marks the public API, the only symbols libweft.so exports. The library is built
// with hidden visibility, so its internals (weft::core, weft::transport, ...) are not part of
// its ABI: they can change without breaking programs linked against it, and the dynamic
// linker has fewer symbols to resolve.
#pragma once

#define WEFT_API __attribute__((visibility("default")))

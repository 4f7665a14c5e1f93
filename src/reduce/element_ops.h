// The reduction operators on one element or one GCC vector of elements.
//
// Contract: each operator is a stateless functor whose operator() takes two values of the
// same type V, either a scalar T or a GCC vector of T (see simd_kernels.h), and returns
// a OP b. The same source serves the scalar tail and the vector body, so they cannot disagree.
// Callers instantiate integer SUM/PRODUCT and the bitwise ops on the unsigned type of the same
// width: unsigned arithmetic wraps by definition, and gives the same bits as two's complement.
//
// Included only by the per-ISA kernel units. Everything is in an unnamed namespace on purpose:
// each unit compiles its own copy with its own -m flags; a shared (COMDAT) copy could be
// compiled for AVX-512 and then run by the scalar path on a CPU without it.
#pragma once

#include <type_traits>

namespace weft::reduce {
namespace {  // NOLINT(google-build-namespaces): see the contract above.

template <typename V>
inline constexpr bool kIsScalar = std::is_arithmetic_v<V>;

struct SumOp {
  template <typename V>
  V operator()(V a, V b) const {
    return static_cast<V>(a + b);  // narrow scalars are promoted to int: the cast wraps back
  }
};

struct ProductOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (kIsScalar<V> && std::is_integral_v<V> && sizeof(V) < sizeof(unsigned)) {
      // uint16 * uint16 would be promoted to (signed) int and overflow: multiply as unsigned.
      return static_cast<V>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
    } else {
      return static_cast<V>(a * b);
    }
  }
};

// T is the element type: floats need the NaN test, integers must not pay for it (and GCC
// warns about x != x on integers).
template <typename T>
struct MinOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return ((a < b) | (a != a)) ? a : b;  // a if smaller or NaN; else b (NaN when b is)
    } else {
      return a < b ? a : b;
    }
  }
};

template <typename T>
struct MaxOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return ((a > b) | (a != a)) ? a : b;
    } else {
      return a > b ? a : b;
    }
  }
};

struct AndOp {
  template <typename V>
  V operator()(V a, V b) const {
    return static_cast<V>(a & b);
  }
};

struct OrOp {
  template <typename V>
  V operator()(V a, V b) const {
    return static_cast<V>(a | b);
  }
};

struct XorOp {
  template <typename V>
  V operator()(V a, V b) const {
    return static_cast<V>(a ^ b);
  }
};

}  // namespace
}  // namespace weft::reduce

// The weft::Error a call throws, for tests of every tier to check its code and message.
#pragma once

#include <gtest/gtest.h>

#include "weft/error.h"

namespace weft::testing {

// The error a call throws, or fails the test when it throws none.
template <typename Fn>
Error error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a weft::Error";
  return Error(ErrorCode::kInternal, "no error was thrown");
}

}  // namespace weft::testing

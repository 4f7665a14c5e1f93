// A TCP port nothing listens on right now, for a test that must name one before it listens
// (a tcp:// init method, weftrun --master-port).
#pragma once

#include "util/socket.h"

namespace weft::testing {

// The kernel's choice for a port-0 listener, closed again: free until someone else takes it.
inline int free_port(const char* host = "127.0.0.1") {
  util::Fd probe = util::listen_on(util::resolve(host, 0), false);
  return util::local_address_of(probe.get()).port();
}

}  // namespace weft::testing

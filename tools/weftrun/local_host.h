// LocalHost — whether a host of a --hosts list is the machine weftrun runs on, so that its node
// starts directly instead of through the remote shell (as mpirun starts its own host's ranks).
//
// A host is this one when it is "localhost", this machine's host name (full or up to the first
// dot), or a name or address that resolves only to addresses of this machine's interfaces
// (loopback included). Resolving may ask DNS, once per host at launch.
//
// Contract: no state; safe from any thread.
#pragma once

#include <string>

namespace weft::run {

bool is_this_host(const std::string& host);

// Whether every address `host` resolves to is a loopback address: a name other hosts cannot
// use to reach this one. False when it does not resolve.
bool is_loopback_only(const std::string& host);

}  // namespace weft::run

// Which machine this process runs on, as seen by peers deciding whether they share a host.
//
// Hostname + kernel boot id + network-namespace inode: processes in different network
// namespaces count as different hosts (that is how tests simulate a cluster on one machine),
// and LOCAL_WORLD_SIZE is never used to guess.
#pragma once

#include <string>

namespace weft::util {

std::string host_identity();

}  // namespace weft::util

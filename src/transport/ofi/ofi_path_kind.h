// The ofi row of the table of path kinds (path_table.h): an OfiPath (ofi_path.h) where
// libfabric offers a fitting provider.
//
// - WEFT_TRANSPORT=ofi: every peer, this host's included, is reached over ofi (shared memory
//   is not used), through WEFT_OFI_PROVIDER or else the first provider that fits (tcp;ofi_rxm
//   on a host without a fabric); no provider at all is an error at init.
// - WEFT_TRANSPORT=auto: peers of other hosts are reached over ofi when this host has fabric
//   hardware (an RDMA device in /sys/class/infiniband: verbs, efa; a cxi or hfi1 device in
//   /dev) whose provider is not a socket emulation, or when WEFT_OFI_PROVIDER names a
//   provider; otherwise TCP carries them and nothing of libfabric is loaded (its start-up
//   costs about 0.1 s).
// - WEFT_TRANSPORT=tcp: never.
// Its card is the endpoint's address in hex. The choice, and why, is logged at INFO.
#pragma once

#include "transport/path_table.h"

namespace weft::transport {

OpenedPath open_ofi_path(const PathSetup& setup);

}  // namespace weft::transport

// --measure: the cost model's parameters on this machine.
//
// alpha and beta from a ping-pong between two weft ranks over TCP on loopback (two threads of
// this process, each a rank of a 2-rank group rendezvousing through an in-memory store, with
// WEFT_TRANSPORT=tcp so that shared memory is not used): alpha is half the median round trip
// of an 8-byte message; beta is the extra half round trip per byte of a 4 MiB message. gamma is
// the fastest of a few runs of weft's float32 SUM kernel over 64 MiB (beyond the caches, like
// the large messages it prices), per byte. Loopback measures this host's kernel and memory, not
// a network: the numbers describe this machine, and docs/scaling.md says how to read them.
// Takes a few seconds; throws weft::Error if the ranks cannot connect.
#pragma once

#include "coll/cost_model.h"

namespace weft_model {

weft::coll::NetworkModel measure_here();

}  // namespace weft_model

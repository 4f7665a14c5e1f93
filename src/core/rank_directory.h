// RankDirectory — which host every rank of a job is on. Rank 0 publishes it once (key
// weft/directory) after every rank's record (core/peer_record.h) arrived, so that each other
// rank reads one short value instead of every rank's record: the store answers O(p) bytes in all
// instead of O(p^2), and a rank reads a peer's addresses only when it first talks to it.
//
// The value, lines separated by '\n':
//   1. the number of distinct hosts H;
//   2. .. H+1. each host's identity (util/host_identity.h; may be empty), in order of first rank;
//   H+2. every rank's host index, comma-separated, rank 0 first.
//
// Thread-safety: a value.
#pragma once

#include <string>
#include <vector>

namespace weft::core {

// host_of_rank[r]: rank r's host identity.
std::string encode_rank_directory(const std::vector<std::string>& host_of_rank);

// Throws weft::Error(kInvalidArgument) naming what is wrong when the value is not a directory of
// exactly `size` ranks.
std::vector<std::string> parse_rank_directory(const std::string& value, int size);

}  // namespace weft::core

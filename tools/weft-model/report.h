// What weft-model prints: per collective, the predicted time of every algorithm for each group
// size and message size, the selector's choice marked, and the sizes where that choice
// changes; as aligned text or as CSV rows (`kind,collective,ranks,bytes,algorithm,seconds,
// selected,from`: kind "time" rows carry a prediction and selected 1 on the selector's choice;
// kind "change" rows say that at `bytes` the choice goes from `from` to `algorithm`).
#pragma once

#include <cstddef>
#include <cstdio>
#include <vector>

#include "coll/cost_model.h"
#include "core/op_signature.h"

namespace weft_model {

struct Request {
  weft::coll::NetworkModel network;
  std::vector<weft::core::OpKind> collectives;
  std::vector<int> ranks;
  std::vector<std::size_t> sizes;
};

// The selector's choice on request.network for a call of equal blocks (the algorithm itself
// for collectives with one).
weft::coll::Algorithm selected(weft::core::OpKind collective, int ranks, std::size_t bytes,
                               const weft::coll::NetworkModel& network);

// Sizes in [1, largest requested size] where the selector's choice changes for this group size.
std::vector<weft::coll::ChoiceChange> changes(weft::core::OpKind collective, int ranks,
                                              const Request& request);

void print_text(std::FILE* out, const Request& request);
// Each group size of request.ranks as hosts of `per_host` ranks (at least 2 hosts, a multiple
// of per_host): per collective and size, the hierarchical algorithm's predicted time, the flat
// algorithm the selector would pick on the hosts' shared links and its time, and the choice
// (docs/scaling.md, "Ranks that share a host"). Throws std::invalid_argument naming a size that
// does not split so.
void print_across_hosts(std::FILE* out, const Request& request, int per_host);
void print_csv(std::FILE* out, const Request& request);

}  // namespace weft_model

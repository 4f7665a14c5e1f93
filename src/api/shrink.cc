// ProcessGroup::shrink: the survivors of a failure continue in a group of their own. The
// agreement on who survived is api/shrink_agreement.h's; here the old group is aborted and the
// new one made from the agreed members, with a context every survivor derives alike.
#include <algorithm>

#include "api/collective_launcher.h"
#include "api/process_group_impl.h"
#include "api/shrink_agreement.h"
#include "core/communicator.h"
#include "weft/process_group.h"

namespace weft {

namespace {

std::string rank_list_text(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

[[noreturn]] void fail_left_out(const core::Communicator& comm, int epoch,
                                const std::vector<int>& members,
                                std::chrono::milliseconds timeout) {
  throw Error(ErrorCode::kAborted,
              "rank " + std::to_string(comm.rank()) + " was left out of shrink #" +
                  std::to_string(epoch) + " of group '" + comm.name() +
                  "': the survivors agreed on ranks " + rank_list_text(members) +
                  " without it (a member is left out when it has not called shrink within the "
                  "timeout, " +
                  std::to_string(timeout.count()) + " ms, or a survivor saw it fail)",
              comm.context_for(core::OpInfo{"shrink"}));
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::shrink(std::chrono::milliseconds timeout) {
  core::Communicator& comm = *impl_->comm;
  if (timeout.count() < 0) {
    api::invalid_argument(comm, "shrink",
                          "timeout must be positive (or 0: the group's), not " +
                              std::to_string(timeout.count()) + " ms");
  }
  const std::chrono::milliseconds wait = timeout.count() > 0 ? timeout : comm.timeout();
  const core::Communicator::ShrinkRound round = comm.next_shrink_round();
  // Releases this group's callers on every thread here, and the members still waiting in one of
  // its operations (they learn of the abort, then come to shrink too).
  comm.abort("shrinking the group (shrink #" + std::to_string(round.epoch) + ")");

  const std::vector<int> members = api::ShrinkAgreement(comm, round.epoch, wait).agree();
  if (std::find(members.begin(), members.end(), comm.rank()) == members.end()) {
    fail_left_out(comm, round.epoch, members, wait);
  }
  std::vector<int> world_ranks;
  for (int rank : members) world_ranks.push_back(comm.world_rank_of(rank));
  auto child = core::Communicator::create(comm.world_ptr(),
                                          comm.name() + "/shrink" + std::to_string(round.epoch),
                                          std::move(world_ranks), round.context, comm.timeout());
  return api::make_group(std::move(child));
}

}  // namespace weft

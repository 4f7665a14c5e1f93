// ProcessGroup::new_group and split: child groups share the process's World (its transport
// and store) and get message contexts of their own that every member derives alike.
#include <algorithm>
#include <set>

#include "api/collective_launcher.h"
#include "api/process_group_impl.h"
#include "core/communicator.h"
#include "weft/process_group.h"

namespace weft {

namespace {

std::shared_ptr<ProcessGroup> make_child(core::Communicator& parent, const std::string& suffix,
                                         const std::vector<int>& group_ranks, uint64_t context,
                                         std::chrono::milliseconds timeout) {
  std::vector<int> world_ranks;
  for (int rank : group_ranks) world_ranks.push_back(parent.world_rank_of(rank));
  // The World outlives the child: the child holds it through its own shared_ptr.
  auto world = parent.world_ptr();
  auto child = core::Communicator::create(std::move(world), parent.name() + "/" + suffix,
                                          std::move(world_ranks), context,
                                          timeout.count() > 0 ? timeout : parent.timeout());
  return api::make_group(std::move(child));
}

}  // namespace

std::shared_ptr<ProcessGroup> ProcessGroup::new_group(const std::vector<int>& ranks,
                                                      std::chrono::milliseconds timeout) {
  std::set<int> unique(ranks.begin(), ranks.end());
  if (ranks.empty() || unique.size() != ranks.size()) {
    api::invalid_argument(*impl_->comm, "new_group", "ranks must be non-empty and distinct");
  }
  for (int rank : ranks) {
    if (rank < 0 || rank >= size()) {
      api::invalid_argument(
          *impl_->comm, "new_group",
          "rank " + std::to_string(rank) + " is not in this group of " + std::to_string(size()));
    }
  }
  // Every member of this group draws the next context, members of the new one or not, so
  // that the counters stay aligned.
  uint64_t context = impl_->comm->next_child_context();
  if (!unique.count(rank())) return nullptr;
  return make_child(*impl_->comm, "g" + std::to_string(context % 100000), ranks, context, timeout);
}

std::shared_ptr<ProcessGroup> ProcessGroup::split(int color, int key,
                                                  std::chrono::milliseconds timeout) {
  std::vector<int32_t> mine{color, key};
  std::vector<int32_t> everyone(2 * size());
  all_gather(ConstBufferView(mine), BufferView(everyone));
  uint64_t context = impl_->comm->next_child_context();
  if (color < 0) return nullptr;
  std::vector<int> members;
  for (int r = 0; r < size(); ++r) {
    if (everyone[2 * r] == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return everyone[2 * a + 1] < everyone[2 * b + 1]; });
  // One context per color, derived alike by every member of that color.
  uint64_t color_context =
      ((context ^ (static_cast<uint64_t>(color) * 0x9E3779B97F4A7C15ull)) & ~uint64_t{1}) | 2;
  return make_child(*impl_->comm, "split" + std::to_string(color), members, color_context, timeout);
}

}  // namespace weft

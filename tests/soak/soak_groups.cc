// Drawing and creating the soak's subgroups (soak_groups.h).
#include "soak_groups.h"

#include <algorithm>
#include <tuple>

namespace weft::soak {
namespace {

std::vector<int> draw_subset(SoakRandom& random, int world) {
  std::vector<int> ranks;
  for (int r = 0; r < world; ++r) {
    if (random.percent(60)) ranks.push_back(r);
  }
  if (ranks.empty()) ranks.push_back(static_cast<int>(random.below(static_cast<uint64_t>(world))));
  return ranks;
}

// As MPI_Comm_split: the members of my color, ordered by (key, world rank).
std::vector<int> split_members(const std::vector<int>& colors, const std::vector<int>& keys,
                               int color) {
  std::vector<std::tuple<int, int>> ordered;
  for (int r = 0; r < static_cast<int>(colors.size()); ++r) {
    if (colors[static_cast<std::size_t>(r)] == color) {
      ordered.emplace_back(keys[static_cast<std::size_t>(r)], r);
    }
  }
  std::sort(ordered.begin(), ordered.end());
  std::vector<int> members;
  for (const auto& [key, rank] : ordered) members.push_back(rank);
  return members;
}

void make_split(SoakRandom& random, ProcessGroup& world, int colors_drawn, bool some_left_out,
                GroupSlot& out) {
  const int n = world.size();
  std::vector<int> colors(static_cast<std::size_t>(n)), keys(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int lowest = some_left_out ? -1 : 0;
    colors[static_cast<std::size_t>(r)] =
        static_cast<int>(random.between(lowest, colors_drawn - 1));
    keys[static_cast<std::size_t>(r)] = static_cast<int>(random.below(4));
  }
  const int me = world.rank();
  const int my_color = colors[static_cast<std::size_t>(me)];
  out.group = world.split(my_color, keys[static_cast<std::size_t>(me)]);
  out.members = my_color < 0 ? std::vector<int>{} : split_members(colors, keys, my_color);
}

}  // namespace

int GroupSlot::my_rank() const { return group ? group->rank() : -1; }

std::string GroupSlot::describe() const {
  std::string text = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    text += (i ? "," : "") + std::to_string(members[i]);
  }
  return text + "}";
}

void make_group(SoakRandom& random, ProcessGroup& world, int slot, GroupSlot& out) {
  out.group.reset();
  if (slot == 1) {
    out.members = draw_subset(random, world.size());
    out.group = world.new_group(out.members);
  } else if (slot == 2) {
    make_split(random, world, 2, false, out);
  } else {
    make_split(random, world, 3, true, out);
  }
}

}  // namespace weft::soak

// The groups a soak runs on, several alive at once: slot 0 is the world; slot 1 a new_group of
// a random subset; slot 2 a split of the world in two colors; slot 3 a split in three colors
// that leaves some ranks out. Membership is drawn from the shared stream, so every rank knows
// every group's members (in group-rank order) whether it belongs or not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "soak_random.h"
#include "weft/process_group.h"

namespace weft::soak {

inline constexpr int kGroupSlots = 4;

struct GroupSlot {
  std::vector<int> members;             // world ranks, in group-rank order
  std::shared_ptr<ProcessGroup> group;  // null where this rank is not a member
  int my_rank() const;                  // -1 where this rank is not a member
  std::string describe() const;         // "{0,2,3}"
};

// Makes (or remakes) group slot `slot` (1 to kGroupSlots - 1): a collective over the world.
void make_group(SoakRandom& random, ProcessGroup& world, int slot, GroupSlot& out);

}  // namespace weft::soak

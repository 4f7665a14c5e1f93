// Drawing a step (soak_steps.h): the weights say how often each kind of step comes up.
#include "soak_steps.h"

#include <algorithm>

#include "soak_values.h"

namespace weft::soak {
namespace {

struct Weighted {
  OpKind op;
  unsigned weight;
};

constexpr Weighted kOpWeights[] = {
    {OpKind::kAllReduce, 14},    {OpKind::kBroadcast, 8}, {OpKind::kReduce, 8},
    {OpKind::kAllGather, 8},     {OpKind::kGather, 5},    {OpKind::kScatter, 5},
    {OpKind::kReduceScatter, 8}, {OpKind::kAllToAll, 8},  {OpKind::kBarrier, 3},
    {OpKind::kSendRecv, 6},      {OpKind::kRing, 5},      {OpKind::kScan, 3},
    {OpKind::kWaitSome, 6},      {OpKind::kRegroup, 2},
};

OpKind draw_op(SoakRandom& random) {
  unsigned total = 0;
  for (const auto& w : kOpWeights) total += w.weight;
  auto ticket = static_cast<unsigned>(random.below(total));
  for (const auto& w : kOpWeights) {
    if (ticket < w.weight) return w.op;
    ticket -= w.weight;
  }
  return OpKind::kBarrier;
}

// How many buffers of `count` elements the op holds on one rank at most, so that the largest
// stays within the byte limit.
std::size_t buffers_per_count(OpKind op, int group_size) {
  switch (op) {
    case OpKind::kAllGather:
    case OpKind::kGather:
    case OpKind::kScatter:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
      return static_cast<std::size_t>(std::max(group_size, 1)) + 1;
    default:
      return 1;
  }
}

// 0, 1, small, not a multiple of the group size, medium, large.
std::size_t draw_count(SoakRandom& random, int group_size, std::size_t max_count) {
  const auto n = static_cast<uint64_t>(std::max(group_size, 1));
  const uint64_t kind = random.below(100);
  std::size_t count;
  if (kind < 5) {
    count = 0;
  } else if (kind < 10) {
    count = 1;
  } else if (kind < 40) {
    count = static_cast<std::size_t>(random.between(2, 64));
  } else if (kind < 60) {
    const uint64_t blocks = random.below(200) + 1;
    count = static_cast<std::size_t>(blocks * n + (n > 1 ? 1 + random.below(n - 1) : 0));
  } else if (kind < 90) {
    count = static_cast<std::size_t>(random.between(65, 16384));
  } else {
    count = static_cast<std::size_t>(random.below(max_count + 1));
  }
  return std::min(count, max_count);
}

}  // namespace

const char* name_of(OpKind op) {
  switch (op) {
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kGather:
      return "gather";
    case OpKind::kScatter:
      return "scatter";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllToAll:
      return "all_to_all";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kSendRecv:
      return "send_recv";
    case OpKind::kRing:
      return "ring_exchange";
    case OpKind::kScan:
      return "scan";
    case OpKind::kWaitSome:
      return "wait_some";
    case OpKind::kRegroup:
      return "regroup";
  }
  return "?";
}

int Step::root_in(int group_size) const {
  return static_cast<int>(root_draw % static_cast<uint64_t>(group_size));
}

int Step::receiver_in(int group_size) const {
  const auto others = static_cast<uint64_t>(group_size - 1);
  return (root_in(group_size) + 1 + static_cast<int>(receiver_draw % others)) % group_size;
}

Step draw_step(SoakRandom& random, uint64_t index, int world_size, int group_slots,
               const StepLimits& limits) {
  Step step;
  step.index = index;
  step.op = draw_op(random);
  step.slot = random.percent(40) ? 0 : static_cast<int>(1 + random.below(group_slots - 1));
  const int n = std::max(world_size, 1);
  step.dtype = static_cast<DType>(random.below(kNumDTypes));
  const auto ops = valid_ops(step.dtype);
  step.reduce = ReduceOp(random.pick(ops));
  if (step.reduce.kind == ReduceOp::kPremulSum) {
    static const std::vector<double> kFactors = {0.5, 2.0, 0.25, 1.5, 0.1};
    step.reduce = ReduceOp::premul_sum(random.pick(kFactors));
  }
  const std::size_t per_buffer = buffers_per_count(step.op, n) * width_of(step.dtype);
  step.count = draw_count(random, n, limits.max_bytes / per_buffer);
  step.root_draw = random.bits();
  step.receiver_draw = random.bits();
  step.tag = static_cast<int>(random.below(1000));
  step.async = random.percent(40);
  step.in_place = random.percent(50);
  step.uneven = random.percent(40);
  step.variant = random.percent(30);
  return step;
}

std::string describe(const Step& step) {
  std::string text = name_of(step.op);
  switch (step.op) {
    case OpKind::kAllReduce:
    case OpKind::kReduce:
    case OpKind::kReduceScatter:
    case OpKind::kScan:
      text += "(" + std::string(name_of(step.reduce.kind));
      if (step.reduce.kind == ReduceOp::kPremulSum)
        text += " " + std::to_string(step.reduce.factor);
      text += ")";
      break;
    default:
      break;
  }
  text += " " + std::string(name_of(step.dtype)) + " x" + std::to_string(step.count);
  text += step.async ? " async" : " blocking";
  if (step.in_place) text += " in-place";
  if (step.uneven) text += " uneven";
  if (step.variant) text += " variant";
  text += " tag=" + std::to_string(step.tag);
  return text;
}

}  // namespace weft::soak

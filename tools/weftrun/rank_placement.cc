#include "rank_placement.h"

#include <stdexcept>

namespace weft::run {
namespace {

constexpr int kMaxRanksPerHost = 4096;

long long total_slots(const std::vector<HostSlots>& hosts) {
  long long total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  return total;
}

std::string np_text(int n) { return "-np " + std::to_string(n); }

Placement every_host(const std::vector<HostSlots>& hosts, std::size_t count, int per_host) {
  Placement placement;
  for (std::size_t i = 0; i < count; ++i) placement.hosts.push_back(hosts[i].host);
  placement.ranks_per_host = per_host;
  return placement;
}

// -n K on the first `count` hosts: each must have K slots, unless oversubscribing.
Placement fixed_per_host(const std::vector<HostSlots>& hosts, std::size_t count, int per_host,
                         bool oversubscribe) {
  if (per_host > kMaxRanksPerHost) {
    throw std::invalid_argument(std::to_string(per_host) + " ranks per host is more than " +
                                std::to_string(kMaxRanksPerHost));
  }
  for (std::size_t i = 0; i < count && !oversubscribe; ++i) {
    if (hosts[i].slots < per_host) {
      throw std::invalid_argument("--nproc-per-node " + std::to_string(per_host) +
                                  " is more than the " + std::to_string(hosts[i].slots) + " slot" +
                                  (hosts[i].slots == 1 ? "" : "s") + " of host " + hosts[i].host +
                                  "; give it more slots, or add --oversubscribe");
    }
  }
  return every_host(hosts, count, per_host);
}

// N ranks by slot, in host order; the hosts used must all get the same number.
Placement by_slot(const std::vector<HostSlots>& hosts, int total, const std::string& what) {
  std::vector<int> counts;
  int left = total;
  for (const HostSlots& h : hosts) {
    if (left == 0) break;
    counts.push_back(std::min(left, h.slots));
    left -= counts.back();
  }
  for (int count : counts) {
    if (count == counts.front()) continue;
    std::string numbers;
    for (int c : counts) numbers += (numbers.empty() ? "" : ", ") + std::to_string(c);
    throw std::invalid_argument(what + " puts " + numbers + " ranks on the hosts " +
                                describe_hosts(hosts) +
                                " (filling each host's slots in order); weftrun runs the same "
                                "number of ranks on every host it uses: choose -np or the "
                                "slots so that they match");
  }
  return every_host(hosts, counts.size(), counts.front());
}

}  // namespace

Placement place_ranks(const std::vector<HostSlots>& hosts, const PlacementRequest& request) {
  if (hosts.empty()) throw std::invalid_argument("no hosts given");
  const long long slots = total_slots(hosts);
  if (slots > (1 << 30)) throw std::invalid_argument("the hosts have too many slots");
  const int total = request.total_ranks;
  const int per_host = request.per_host;

  if (per_host > 0 && total > 0) {
    if (total % per_host != 0 || static_cast<std::size_t>(total / per_host) > hosts.size()) {
      throw std::invalid_argument(
          np_text(total) + " with --nproc-per-node " + std::to_string(per_host) + " needs " +
          (total % per_host != 0 ? "a multiple of the per-host count"
                                 : std::to_string(total / per_host) + " hosts, and " +
                                       std::to_string(hosts.size()) + " are listed"));
    }
    return fixed_per_host(hosts, static_cast<std::size_t>(total / per_host), per_host,
                          request.oversubscribe);
  }
  if (per_host > 0) return fixed_per_host(hosts, hosts.size(), per_host, request.oversubscribe);
  if (total == 0) return by_slot(hosts, static_cast<int>(slots), "one rank per slot");

  if (total > slots) {
    if (!request.oversubscribe) {
      throw std::invalid_argument(np_text(total) + " is more than the " + std::to_string(slots) +
                                  " slots of the hosts " + describe_hosts(hosts) +
                                  "; give fewer ranks, more slots, or --oversubscribe");
    }
    const auto count = static_cast<int>(hosts.size());
    if (total % count != 0) {
      throw std::invalid_argument(np_text(total) +
                                  " with --oversubscribe does not divide evenly "
                                  "over the " +
                                  std::to_string(count) + " hosts");
    }
    return fixed_per_host(hosts, hosts.size(), total / count, /*oversubscribe=*/true);
  }
  return by_slot(hosts, total, np_text(total));
}

}  // namespace weft::run

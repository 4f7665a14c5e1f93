#include <cstring>
#include <numeric>
#include <string>

#include "coll/algorithms.h"
#include "coll/hierarchical/hierarchical.h"
#include "coll/hierarchical/host_order.h"
#include "coll/hierarchical/leader_transfers.h"
#include "coll/scratch.h"
#include "weft/error.h"

namespace weft::coll {

namespace {

// What a host's leader knows of its members' split sizes: for each member (in member order),
// the bytes it sends to and expects from every group rank.
class HostSplits {
 public:
  HostSplits(int members, int ranks) : ranks_(ranks), rows_(row_size(ranks) * members, 0) {}
  static std::size_t row_size(int ranks) { return 2 * static_cast<std::size_t>(ranks); }
  uint64_t* row(int member) { return rows_.data() + row_size(ranks_) * member; }
  uint64_t sends(int member, int to) const { return rows_[row_size(ranks_) * member + to]; }
  uint64_t expects(int member, int from) const {
    return rows_[row_size(ranks_) * member + ranks_ + from];
  }
  void* data() { return rows_.data(); }

 private:
  int ranks_;
  std::vector<uint64_t> rows_;
};

// The leader's copy of its members' split sizes: gathered from them, or, for an even call, the
// same block everywhere (every member knows it from the call itself).
HostSplits splits_at_leader(CollectiveCall& on_host, int ranks,
                            std::span<const std::size_t> send_bytes,
                            std::span<const std::size_t> recv_bytes, bool even) {
  const int members = on_host.size();
  const bool leader = on_host.rank() == 0;
  HostSplits splits(leader ? members : 0, ranks);
  if (even) {
    for (int m = 0; m < (leader ? members : 0); ++m) {
      std::fill_n(splits.row(m), HostSplits::row_size(ranks), uint64_t{send_bytes[0]});
    }
    return splits;
  }
  std::vector<uint64_t> mine(HostSplits::row_size(ranks));
  std::copy(send_bytes.begin(), send_bytes.end(), mine.begin());
  std::copy(recv_bytes.begin(), recv_bytes.end(), mine.begin() + ranks);
  const std::vector<std::size_t> row_bytes(members, mine.size() * sizeof(uint64_t));
  gather_to_leader(on_host, mine.data(), leader ? splits.data() : nullptr, row_bytes);
  return splits;
}

// The callers' mismatch: `from` sends `to` a block of another size than `to` expects.
[[noreturn]] void split_sizes_disagree(int from, int to, uint64_t sent, uint64_t expected) {
  throw Error(ErrorCode::kMismatch, "all_to_all split sizes disagree: rank " +
                                        std::to_string(from) + " sends " + std::to_string(sent) +
                                        " bytes to rank " + std::to_string(to) +
                                        ", which expects " + std::to_string(expected));
}

// My blocks in the order of their destinations' hosts, one after the other.
Scratch pack_by_destination_host(const core::HostLayout& layout, const uint8_t* input,
                                 std::span<const std::size_t> send_bytes,
                                 std::span<const std::size_t> send_offsets) {
  Scratch packed(std::accumulate(send_bytes.begin(), send_bytes.end(), std::size_t{0}));
  std::size_t position = 0;
  for (const auto& members : layout.members) {
    for (int to : members) {
      if (send_bytes[to]) {
        std::memcpy(packed.data() + position, input + send_offsets[to], send_bytes[to]);
      }
      position += send_bytes[to];
    }
  }
  return packed;
}

// The leader's side: its members' packed blocks (gathered one after the other) regrouped into
// one message per destination host, exchanged among the leaders, and regrouped again into
// what each member receives, in source rank order.
//
// With split sizes, each message starts with a header: the size of every block it carries, as
// its senders gave them. The receiving leader checks them against what its members expect, so
// that a disagreement between any two ranks fails the call naming both, as the flat
// all_to_all's size check on each message does (only the hosts' totals would show otherwise).
class LeaderExchange {
 public:
  LeaderExchange(const core::HostLayout& layout, int my_host, const HostSplits& splits,
                 bool with_headers)
      : layout_(layout),
        members_(layout.members[my_host]),
        splits_(splits),
        with_headers_(with_headers) {}

  std::size_t sent_by(int member) const {
    std::size_t bytes = 0;
    for (int to = 0; to < ranks(); ++to) bytes += splits_.sends(member, to);
    return bytes;
  }
  std::size_t received_by(int member) const {
    std::size_t bytes = 0;
    for (int from = 0; from < ranks(); ++from) bytes += splits_.expects(member, from);
    return bytes;
  }

  // From the gathered blocks (member after member, each in destination-host order) to the
  // messages to each host (each member's part for that host, member after member).
  Scratch regroup_by_host(const uint8_t* gathered, std::vector<std::size_t>& to_host) const {
    const int members = local_members();
    to_host.assign(layout_.hosts(), 0);
    std::vector<std::size_t> part(static_cast<std::size_t>(members) * layout_.hosts(), 0);
    for (int m = 0; m < members; ++m) {
      for (int h = 0; h < layout_.hosts(); ++h) {
        for (int to : layout_.members[h]) part[m * layout_.hosts() + h] += splits_.sends(m, to);
        to_host[h] += part[m * layout_.hosts() + h];
      }
    }
    for (int h = 0; h < layout_.hosts(); ++h) to_host[h] += header_bytes(h);
    Scratch outgoing(std::accumulate(to_host.begin(), to_host.end(), std::size_t{0}));
    std::vector<std::size_t> read_at(members, 0);
    for (int m = 1; m < members; ++m) read_at[m] = read_at[m - 1] + sent_by(m - 1);
    std::size_t position = 0;
    for (int h = 0; h < layout_.hosts(); ++h) {
      if (with_headers_) {
        for (int m = 0; m < members; ++m) {
          for (int to : layout_.members[h]) {
            const uint64_t bytes = splits_.sends(m, to);
            std::memcpy(outgoing.data() + position, &bytes, sizeof(bytes));
            position += sizeof(bytes);
          }
        }
      }
      for (int m = 0; m < members; ++m) {
        const std::size_t bytes = part[m * layout_.hosts() + h];
        if (bytes) std::memcpy(outgoing.data() + position, gathered + read_at[m], bytes);
        read_at[m] += bytes;
        position += bytes;
      }
    }
    return outgoing;
  }

  // What each host's message to us holds: for each of its members, its block for each of ours.
  std::vector<std::size_t> from_hosts() const {
    std::vector<std::size_t> from_host(layout_.hosts(), 0);
    for (int h = 0; h < layout_.hosts(); ++h) {
      from_host[h] = header_bytes(h);
      for (int from : layout_.members[h]) {
        for (int m = 0; m < local_members(); ++m) from_host[h] += splits_.expects(m, from);
      }
    }
    return from_host;
  }

  // From the hosts' messages (host after host, each source member after member, each with its
  // blocks for our members in member order) to each member's blocks in source rank order.
  Scratch regroup_by_member(const uint8_t* incoming, std::vector<std::size_t>& to_member) const {
    const int members = local_members();
    // Where the block from each source rank to each of our members lies in `incoming`.
    std::vector<std::size_t> at(static_cast<std::size_t>(ranks()) * members, 0);
    std::size_t position = 0;
    for (const auto& sources : layout_.members) {
      if (with_headers_) {
        check_header(incoming + position, sources);
        position += sizeof(uint64_t) * sources.size() * members;
      }
      for (int from : sources) {
        for (int m = 0; m < members; ++m) {
          at[from * members + m] = position;
          position += splits_.expects(m, from);
        }
      }
    }
    to_member.assign(members, 0);
    for (int m = 0; m < members; ++m) to_member[m] = received_by(m);
    Scratch delivered(std::accumulate(to_member.begin(), to_member.end(), std::size_t{0}));
    std::size_t write = 0;
    for (int m = 0; m < members; ++m) {
      for (int from = 0; from < ranks(); ++from) {
        const std::size_t bytes = splits_.expects(m, from);
        if (bytes) std::memcpy(delivered.data() + write, incoming + at[from * members + m], bytes);
        write += bytes;
      }
    }
    return delivered;
  }

  int local_members() const { return static_cast<int>(members_.size()); }

 private:
  int ranks() const { return static_cast<int>(layout_.host_of.size()); }

  std::size_t header_bytes(int host) const {
    return with_headers_ ? sizeof(uint64_t) * members_.size() * layout_.members[host].size() : 0;
  }

  // A header from the leader of `sources`: what each of them sends each of our members.
  void check_header(const uint8_t* header, const std::vector<int>& sources) const {
    const int members = local_members();
    for (std::size_t s = 0; s < sources.size(); ++s) {
      for (int m = 0; m < members; ++m) {
        uint64_t sent;
        std::memcpy(&sent, header + sizeof(uint64_t) * (s * members + m), sizeof(sent));
        const uint64_t expected = splits_.expects(m, sources[s]);
        if (sent != expected) split_sizes_disagree(sources[s], members_[m], sent, expected);
      }
    }
  }

  const core::HostLayout& layout_;
  const std::vector<int>& members_;
  const HostSplits& splits_;
  bool with_headers_;
};

// Whether the blocks lie one after the other in rank order (then they arrive straight there).
bool back_to_back(std::span<const std::size_t> bytes, std::span<const std::size_t> offsets) {
  std::size_t expected = 0;
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r] && offsets[r] != expected) return false;
    expected += bytes[r];
  }
  return true;
}

void exchange(CollectiveCall& call, const void* input, std::span<const std::size_t> send_bytes,
              std::span<const std::size_t> send_offsets, void* output,
              std::span<const std::size_t> recv_bytes, std::span<const std::size_t> recv_offsets,
              bool even) {
  const core::HostLayout& layout = call.communicator().host_layout();
  core::HostGroups& groups = call.communicator().host_groups();
  const int my_host = layout.host_of[call.rank()];
  const bool leader = groups.leaders != nullptr;

  CollectiveCall sizes_on_host = call.on(*groups.local);
  const HostSplits splits =
      splits_at_leader(sizes_on_host, call.size(), send_bytes, recv_bytes, even);
  const LeaderExchange leader_side(layout, my_host, splits, /*with_headers=*/!even);

  // Gather: every member's blocks, in destination-host order, to the leader.
  const Scratch packed = pack_by_destination_host(layout, static_cast<const uint8_t*>(input),
                                                  send_bytes, send_offsets);
  std::vector<std::size_t> sent(leader ? leader_side.local_members() : 0);
  for (std::size_t m = 0; m < sent.size(); ++m) sent[m] = leader_side.sent_by(static_cast<int>(m));
  Scratch gathered(std::accumulate(sent.begin(), sent.end(), std::size_t{0}));
  std::vector<std::size_t> my_send_total(groups.local->size(), 0);
  my_send_total[groups.local->rank()] = packed.size();
  if (leader) my_send_total = sent;
  CollectiveCall gather_on_host = call.on(*groups.local);
  gather_to_leader(gather_on_host, packed.data(), gathered.data(), my_send_total);

  // One message per pair of hosts among the leaders.
  Scratch delivered;
  std::vector<std::size_t> to_member(leader ? leader_side.local_members() : 0);
  if (leader) {
    std::vector<std::size_t> to_host;
    const Scratch outgoing = leader_side.regroup_by_host(gathered.data(), to_host);
    const std::vector<std::size_t> from_host = leader_side.from_hosts();
    Scratch incoming(std::accumulate(from_host.begin(), from_host.end(), std::size_t{0}));
    CollectiveCall across = call.on(*groups.leaders);
    run_all_to_all(leaders_algorithm(across, core::OpKind::kAllToAll, outgoing.size()), across,
                   outgoing.data(), to_host, offsets_of(to_host), incoming.data(), from_host,
                   offsets_of(from_host));
    delivered = leader_side.regroup_by_member(incoming.data(), to_member);
  }

  // Scatter: each member's blocks, in source rank order, from the leader.
  const std::size_t received =
      std::accumulate(recv_bytes.begin(), recv_bytes.end(), std::size_t{0});
  if (!leader) {
    to_member.assign(groups.local->size(), 0);
    to_member[groups.local->rank()] = received;
  }
  const bool straight_to_output = back_to_back(recv_bytes, recv_offsets);
  Scratch arrived(straight_to_output ? 0 : received);
  auto* out = static_cast<uint8_t*>(output);
  CollectiveCall scatter_on_host = call.on(*groups.local);
  scatter_from_leader(scatter_on_host, delivered.data(), straight_to_output ? out : arrived.data(),
                      to_member);
  if (straight_to_output) return;
  std::size_t position = 0;
  for (std::size_t r = 0; r < recv_bytes.size(); ++r) {
    if (recv_bytes[r]) std::memcpy(out + recv_offsets[r], arrived.data() + position, recv_bytes[r]);
    position += recv_bytes[r];
  }
}

}  // namespace

void hierarchical_all_to_all(CollectiveCall& call, const void* input,
                             std::span<const std::size_t> send_bytes,
                             std::span<const std::size_t> send_offsets, void* output,
                             std::span<const std::size_t> recv_bytes,
                             std::span<const std::size_t> recv_offsets) {
  exchange(call, input, send_bytes, send_offsets, output, recv_bytes, recv_offsets,
           /*even=*/false);
}

void hierarchical_even_all_to_all(CollectiveCall& call, const void* input, void* output,
                                  std::size_t block) {
  std::vector<std::size_t> bytes(call.size(), block);
  std::vector<std::size_t> offsets = offsets_of(bytes);
  exchange(call, input, bytes, offsets, output, bytes, offsets, /*even=*/true);
}

}  // namespace weft::coll

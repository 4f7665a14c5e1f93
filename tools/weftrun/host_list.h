// HostList — the hosts a job started from one command runs on (--hosts, --hostfile), each with
// its slots: how many ranks it takes before it counts as oversubscribed.
//
// The formats are mpirun's, so that a hostfile written for Open MPI works unchanged:
//   --hosts a:2,b:2,c        a bare host has 1 slot (as mpirun's --host)
//   hostfile lines           "host", "host slots=N", "host slots=N max_slots=M"; '#' starts a
//                            comment; blank lines are skipped
// A bare host in a hostfile has 1 slot too. NOTE(weftrun-hostfile-slots): Open MPI 4 and later
// count a bare hostfile host's cores instead; weftrun cannot see a remote host's cores before
// starting anything there, so it says 1 and the docs say so. max_slots is accepted and not
// enforced. A host listed twice gets the sum of its slots, in the place it was first listed
// (Open MPI does the same).
//
// Contract: pure functions; every error is std::invalid_argument with one line fit to print
// after "weftrun: ", naming the flag or file (and line) at fault.
#pragma once

#include <string>
#include <vector>

namespace weft::run {

struct HostSlots {
  std::string host;
  int slots = 1;
};

// The value of --hosts. An IPv6 literal goes in brackets: [fd00::1]:2.
std::vector<HostSlots> parse_host_list(const std::string& text);

// A hostfile's text; `name` (the file's path) is only for messages.
std::vector<HostSlots> parse_hostfile(const std::string& text, const std::string& name);

// Reads and parses the hostfile at `path`.
std::vector<HostSlots> read_hostfile(const std::string& path);

// "a:2, b:2": the hosts as --hosts would spell them, for messages.
std::string describe_hosts(const std::vector<HostSlots>& hosts);

}  // namespace weft::run

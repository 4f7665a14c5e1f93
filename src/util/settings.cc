#include "util/settings.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "weft/error.h"

namespace weft::util {

const std::vector<SettingSpec>& all_settings() {
  static const std::vector<SettingSpec> kSettings = {
      {"WEFT_DEBUG", SettingType::kChoice, "warn", "error|warn|info|debug|trace",
       "Log level of weft's messages (stderr, or WEFT_DEBUG_FILE)."},
      {"WEFT_DEBUG_SUBSYS", SettingType::kString, "", "",
       "Subsystems whose messages are logged: a comma list of init, transport, coll, shm, "
       "store, python; ^ first excludes those listed. Empty or all: every subsystem."},
      {"WEFT_DEBUG_FILE", SettingType::kString, "", "",
       "File weft's messages go to instead of stderr (appended); %h: host name, %p: pid, %r: "
       "rank (lines before the rank is known go to stderr). Empty: stderr."},
      {"WEFT_TIMEOUT", SettingType::kDuration, "300s", "",
       "Deadline of every wait (rendezvous, connection, operation) unless the group or the "
       "operation sets its own. Seconds, or with a unit: 250ms, 30s, 5m."},
      {"WEFT_SOCKET_IFNAME", SettingType::kString, "", "",
       "Network interfaces whose addresses ranks listen on, NCCL_SOCKET_IFNAME's syntax: a "
       "comma list of name prefixes (eth,ib), exact names after = (=eth0), exclusions after ^ "
       "(^docker,lo; ^=docker0). Several matching: every address of each, offered to peers in "
       "the list's order, then the kernel's; logged at INFO. Empty: every address, each peer "
       "trying the others' published addresses (loopback only for a loopback MASTER_ADDR)."},
      {"WEFT_SOCKET_CONGESTION", SettingType::kString, "auto", "",
       "TCP congestion control of the connections between ranks. auto: the system's, but reno in "
       "place of one that paces every stream at its own estimate (bbr), which holds a burst "
       "back to the last rate it measured; system: the system's; a name (cubic, reno, dctcp, "
       "...): that one, an error when the kernel refuses it. Logged at INFO."},
      {"WEFT_SOCKET_NSTREAMS", SettingType::kString, "auto", "",
       "TCP connections per pair of ranks on different hosts for large messages, the first "
       "included (1 to 16): a message from 512 KiB up is split across them. auto: one per 10 "
       "Gbit/s of the interface's speed, at most 8 (8 on AWS's ENA, whose flows are capped each); "
       "1 where the speed is unknown (loopback, most virtual NICs). Logged at INFO."},
      {"WEFT_SOCKET_ZEROCOPY", SettingType::kString, "auto", "",
       "Payloads from 256 KiB up sent with MSG_ZEROCOPY: the kernel reads them from the "
       "caller's buffer instead of copying them, and the send completes once the peer has "
       "acknowledged them. auto: on interfaces of 25 Gbit/s and up; 1: on every connection; 0: "
       "never. A connection stops where the kernel reports that it copies anyway (loopback, "
       "veth)."},
      {"WEFT_JOB_TOKEN", SettingType::kString, "", "",
       "Secret shared by the ranks of one job (and its store): every connection proves it "
       "knows it by a challenge-response, the token itself is never sent or stored. weftrun "
       "sets it. Empty: no authentication; rank 0 shares a random job id that keeps jobs apart "
       "by accident only."},
      {"WEFT_STORE_ADDR", SettingType::kString, "", "",
       "host:port of a weft store already served by the launcher (weftrun sets it). Empty: "
       "rank 0 serves the store at MASTER_ADDR:MASTER_PORT."},
      {"WEFT_STORE_MAX_CLIENTS", SettingType::kInt, "65536", "",
       "Connections the store server (rank 0's or weftrun's) serves at once; one more gets an "
       "error and is closed, logged at WARN. Read when the server starts."},
      {"WEFT_STORE_STALL_TIMEOUT", SettingType::kDuration, "30s", "",
       "How long the store server lets a connection stall mid-request (no whole request since "
       "connecting, a request sent in part, replies left unread) before closing it. Idle or "
       "waiting clients are never closed."},
      {"WEFT_TRANSPORT", SettingType::kChoice, "auto", "auto|tcp|ofi",
       "Transport between ranks. auto: shared memory between ranks of one host; between hosts, "
       "libfabric (ofi) where the host has fabric hardware or WEFT_OFI_PROVIDER names a "
       "provider, else TCP; tcp: TCP only; ofi: libfabric for every peer, this host's too."},
      {"WEFT_OFI_PROVIDER", SettingType::kString, "", "",
       "The libfabric provider of the ofi path (libfabric's names, as FI_PROVIDER: verbs;ofi_rxm, "
       "efa, cxi, tcp;ofi_rxm, ...). Empty: the first that fits."},
      {"WEFT_SHM_SINGLE_COPY", SettingType::kChoice, "auto", "auto|off",
       "Large messages between ranks of one host. auto: the receiver reads them straight from "
       "the sender's memory (process_vm_readv) where the kernel allows it, else they are copied "
       "through shared memory; off: always copied through shared memory."},
      {"WEFT_SHM_SLOT_STORES", SettingType::kChoice, "auto", "auto|ordinary|streaming",
       "How same-host collectives write their pieces into the group's shared memory. auto: "
       "group rank 0 times calls both ways now and then and the group uses the faster, by "
       "piece size (which is faster depends on whether the ranks' cores share a cache); "
       "ordinary or streaming (non-temporal) stores: always that way."},
      {"WEFT_HOST_ID", SettingType::kString, "", "",
       "This process's host identity, as ranks compare it to find who shares a host. Empty: "
       "hostname, boot id and network namespace. Set it to make ranks of one machine act as "
       "separate hosts (tests), never to merge real hosts."},
      {"WEFT_ALGO", SettingType::kString, "", "",
       "Forces a collective algorithm by name (see docs/algorithms.md). Empty: the selector "
       "decides."},
      {"WEFT_NET_ALPHA", SettingType::kString, "", "",
       "Latency of one message between ranks that do not share memory, for the selector's cost "
       "model (5us, 0.1ms, 2e-5). Empty: the selector's own (20us). Read when a group is made."},
      {"WEFT_NET_BETA", SettingType::kString, "", "",
       "Transfer time per byte between ranks that do not share memory, for the selector's cost "
       "model, as a rate (10Gbit/s, 1.25GB/s) or seconds per byte (8e-10). Empty: the "
       "selector's own (1.25GB/s). Read when a group is made."},
      {"WEFT_NET_GAMMA", SettingType::kString, "", "",
       "Reduction time per byte for the selector's cost model, as a rate (16GB/s) or seconds per "
       "byte. Empty: the selector's own (16GB/s). Read when a group is made."},
      {"WEFT_SHM_ALPHA", SettingType::kString, "", "",
       "Time of one phase over shared memory among a host's ranks (a synchronized round), for "
       "the selector's cost model, which prices hierarchical against flat algorithms of groups "
       "over hosts (2us, 5e-6). Empty: the selector's own (3us). Read when a group is made."},
      {"WEFT_SHM_BETA", SettingType::kString, "", "",
       "Copy time per byte over shared memory within a host, for the selector's cost model, as "
       "a rate (4GB/s) or seconds per byte. Empty: the selector's own (4GB/s). Read when a "
       "group is made."},
      {"WEFT_SPIN_US", SettingType::kInt, "-1", "",
       "Microseconds a waiting thread spins before it sleeps. -1: adaptive (socket waits "
       "from 50 us within 10-400 us, same-host waits as docs/env.md says). 0 sleeps at once."},
      {"WEFT_REDUCE_ISA", SettingType::kString, "", "",
       "Forces the reduction kernels' instruction set: scalar, avx2 or avx512 (for tests and "
       "comparisons). Empty: the best this CPU runs."},
      {"WEFT_HANDSHAKE_TIMEOUT", SettingType::kDuration, "10s", "",
       "How long a connection between ranks may take to complete its handshake (the job "
       "token's challenge-response) before it is dropped."},
      {"WEFT_FLIGHT_RECORDER", SettingType::kInt, "64", "",
       "How many of its last operations each group keeps in memory for the dump printed when "
       "a collective times out or a peer fails (docs/observability.md). 0: none kept."},
      {"WEFT_FLIGHT_DIR", SettingType::kString, "", "",
       "Directory where each rank writes its flight recorder (rank<R>.txt) when it fails or is "
       "stopped by SIGTERM/SIGINT. weftrun sets it to a directory of its own and prints the "
       "ranks' last ops side by side when a job fails. Empty: no files."},
      {"WEFT_TRACE", SettingType::kString, "", "",
       "Directory where each rank writes its timeline of every operation as Chrome-trace JSON "
       "(rank<R>.json) when its groups shut down; weftrun merges them into trace.json. Empty: "
       "no timeline."},
  };
  return kSettings;
}

static const SettingSpec& spec_of(std::string_view name) {
  for (const SettingSpec& spec : all_settings()) {
    if (spec.name == name) return spec;
  }
  throw Error(ErrorCode::kInternal, "setting " + std::string(name) + " is not declared");
}

static std::string raw_value(const SettingSpec& spec) {
  const char* value = std::getenv(std::string(spec.name).c_str());
  return value ? std::string(value) : std::string(spec.default_value);
}

static Error malformed(const SettingSpec& spec, const std::string& value, const char* expected) {
  return Error(ErrorCode::kInvalidArgument,
               std::string(spec.name) + "='" + value + "' is malformed: expected " + expected);
}

std::string setting_string(std::string_view name) { return raw_value(spec_of(name)); }

int64_t setting_int(std::string_view name) {
  const SettingSpec& spec = spec_of(name);
  std::string value = raw_value(spec);
  char* end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0) throw malformed(spec, value, "an integer");
  return parsed;
}

bool setting_bool(std::string_view name) {
  const SettingSpec& spec = spec_of(name);
  std::string value = raw_value(spec);
  if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
  if (value == "0" || value == "false" || value == "no" || value == "off") return false;
  throw malformed(spec, value, "1/0, true/false, yes/no or on/off");
}

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what) {
  std::string value(text);
  char* end = nullptr;
  errno = 0;
  double number = std::strtod(value.c_str(), &end);
  std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "ms")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  if (value.empty() || end == value.c_str() || errno != 0 || scale == 0 || !(number >= 0) ||
      !std::isfinite(number)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + "='" + value +
                    "' is malformed: expected a non-negative duration like 30, 1.5s, 250ms, 2m");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(number * scale)));
}

namespace {

// The number at the start of `text` (non-negative, finite) and the unit after it.
std::pair<double, std::string> number_and_unit(std::string_view text, std::string_view what,
                                               const char* expected) {
  const std::string value(text);
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(value.c_str(), &end);
  if (value.empty() || end == value.c_str() || errno != 0 || !std::isfinite(number) ||
      !(number >= 0) || std::isspace(static_cast<unsigned char>(value.front()))) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + "='" + value + "' is malformed: expected " + expected);
  }
  return {number, std::string(end)};
}

}  // namespace

double parse_seconds(std::string_view text, std::string_view what) {
  constexpr const char* kExpected = "a time such as 5us, 0.1ms, 50ns or 2e-5 (seconds)";
  auto [value, unit] = number_and_unit(text, what, kExpected);
  if (unit.empty() || unit == "s") return value;
  // Divisions: 10us is then exactly the double nearest 1e-5, as the same literal in C++ is.
  if (unit == "ms") return value / 1e3;
  if (unit == "us") return value / 1e6;
  if (unit == "ns") return value / 1e9;
  throw Error(ErrorCode::kInvalidArgument, std::string(what) + "='" + std::string(text) +
                                               "' is malformed: expected " + kExpected);
}

double parse_seconds_per_byte(std::string_view text, std::string_view what) {
  constexpr const char* kExpected =
      "a rate such as 10GB/s, 100Gbit/s, 800MB/s, or seconds per byte such as 8e-10";
  auto [value, unit] = number_and_unit(text, what, kExpected);
  if (unit.empty()) return value;
  double scale = 0;  // bytes per second of one unit
  if (unit == "GB/s")
    scale = 1e9;
  else if (unit == "MB/s")
    scale = 1e6;
  else if (unit == "Gbit/s" || unit == "Gb/s")
    scale = 1e9 / 8;
  else if (unit == "Mbit/s" || unit == "Mb/s")
    scale = 1e6 / 8;
  const double bytes_per_second = value * scale;
  if (!(bytes_per_second > 0) || !std::isfinite(1 / bytes_per_second)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + "='" + std::string(text) +
                                                 "' is malformed: expected " + kExpected +
                                                 (scale > 0 ? ", above 0" : ""));
  }
  return 1 / bytes_per_second;
}

std::chrono::milliseconds setting_duration(std::string_view name) {
  const SettingSpec& spec = spec_of(name);
  return parse_duration(raw_value(spec), spec.name);
}

std::string setting_choice(std::string_view name) {
  const SettingSpec& spec = spec_of(name);
  std::string value = raw_value(spec);
  std::string_view choices = spec.choices;
  while (!choices.empty()) {
    auto bar = choices.find('|');
    if (choices.substr(0, bar) == value) return value;
    if (bar == std::string_view::npos) break;
    choices.remove_prefix(bar + 1);
  }
  throw malformed(spec, value, ("one of " + std::string(spec.choices)).c_str());
}

}  // namespace weft::util

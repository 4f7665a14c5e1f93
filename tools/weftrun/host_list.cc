#include "host_list.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace weft::run {
namespace {

// The most slots one host may claim: far beyond any machine, far from overflowing a sum.
constexpr int kMaxSlots = 4096;

// "N" as a slot count in [1, kMaxSlots], or -1.
int parse_slots(const std::string& text) {
  if (text.empty() || text.size() > 5 || text[0] == '0' ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  int slots = std::stoi(text);
  return slots <= kMaxSlots ? slots : -1;
}

// Whitespace, quotes and the like would never name a host; refusing them here keeps a typo
// from reaching the remote shell.
bool plausible_host(const std::string& host) {
  if (host.empty()) return false;
  return std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
  });
}

// Adds a host, or its slots to the same host listed before.
void add_host(std::vector<HostSlots>& hosts, HostSlots entry) {
  auto same = std::find_if(hosts.begin(), hosts.end(),
                           [&](const HostSlots& h) { return h.host == entry.host; });
  if (same == hosts.end()) {
    hosts.push_back(std::move(entry));
  } else {
    same->slots = std::min(same->slots + entry.slots, kMaxSlots);
  }
}

// One --hosts item: "host", "host:N", "[v6]", "[v6]:N".
HostSlots parse_host_item(const std::string& item) {
  const std::string where = "--hosts: '" + item + "'";
  HostSlots entry;
  std::string slots_text;
  if (!item.empty() && item[0] == '[') {
    std::size_t close = item.find(']');
    if (close == std::string::npos) throw std::invalid_argument(where + " has no closing ']'");
    entry.host = item.substr(1, close - 1);
    std::string rest = item.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') throw std::invalid_argument(where + ": expected ':SLOTS' after ']'");
      slots_text = rest.substr(1);
      if (slots_text.empty()) throw std::invalid_argument(where + ": expected a number after ':'");
    }
  } else {
    std::size_t colon = item.find(':');
    if (colon != std::string::npos && item.find(':', colon + 1) != std::string::npos) {
      throw std::invalid_argument(where + ": write an IPv6 address in brackets, [addr]:SLOTS");
    }
    entry.host = item.substr(0, colon);
    if (colon != std::string::npos) {
      slots_text = item.substr(colon + 1);
      if (slots_text.empty()) throw std::invalid_argument(where + ": expected a number after ':'");
    }
  }
  if (!plausible_host(entry.host)) throw std::invalid_argument(where + " is not a host name");
  if (!slots_text.empty()) {
    entry.slots = parse_slots(slots_text);
    if (entry.slots < 0) {
      throw std::invalid_argument(where + ": slots must be a whole number from 1 to " +
                                  std::to_string(kMaxSlots));
    }
  }
  return entry;
}

// One hostfile line without its comment; nullopt-like empty host for a blank line.
HostSlots parse_hostfile_line(const std::string& line, const std::string& where) {
  std::istringstream words(line);
  HostSlots entry;
  if (!(words >> entry.host)) return entry;
  if (!plausible_host(entry.host)) {
    throw std::invalid_argument(where + ": '" + entry.host + "' is not a host name");
  }
  bool slots_given = false;
  for (std::string word; words >> word;) {
    std::size_t equals = word.find('=');
    std::string key = word.substr(0, equals);
    std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
    if (key != "slots" && key != "max_slots") {
      throw std::invalid_argument(where + ": unknown '" + word +
                                  "' (weftrun reads 'slots=N' and 'max_slots=N')");
    }
    int number = parse_slots(value);
    if (number < 0) {
      throw std::invalid_argument(where + ": " + key + " must be a whole number from 1 to " +
                                  std::to_string(kMaxSlots) + ", got '" + word + "'");
    }
    if (key == "slots") {
      if (slots_given) throw std::invalid_argument(where + ": slots given twice");
      entry.slots = number;
      slots_given = true;
    }
  }
  return entry;
}

}  // namespace

std::vector<HostSlots> parse_host_list(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("--hosts: expects at least one host");
  std::vector<HostSlots> hosts;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) throw std::invalid_argument("--hosts: '" + text + "' has an empty item");
    add_host(hosts, parse_host_item(item));
  }
  if (text.back() == ',') throw std::invalid_argument("--hosts: '" + text + "' has an empty item");
  return hosts;
}

std::vector<HostSlots> parse_hostfile(const std::string& text, const std::string& name) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line = line.substr(0, line.find('#'));
    HostSlots entry = parse_hostfile_line(line, name + " line " + std::to_string(number));
    if (!entry.host.empty()) add_host(hosts, std::move(entry));
  }
  if (hosts.empty()) throw std::invalid_argument(name + " lists no host");
  return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--hostfile: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile(text.str(), path);
}

std::string describe_hosts(const std::vector<HostSlots>& hosts) {
  std::string text;
  for (const HostSlots& h : hosts) {
    bool v6 = h.host.find(':') != std::string::npos;
    text += (text.empty() ? "" : ", ") + (v6 ? "[" + h.host + "]" : h.host) + ":" +
            std::to_string(h.slots);
  }
  return text;
}

}  // namespace weft::run

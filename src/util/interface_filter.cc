#include "util/interface_filter.h"

#include <algorithm>

#include "weft/error.h"

namespace weft::util {
namespace {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

InterfaceFilter InterfaceFilter::parse(std::string_view value, std::string_view variable) {
  InterfaceFilter filter;
  filter.variable_ = variable;
  filter.value_ = value;
  std::string_view rest = trim(value);
  if (!rest.empty() && rest.front() == '^') {
    filter.exclude_ = true;
    rest = trim(rest.substr(1));
  }
  if (!rest.empty() && rest.front() == '=') {
    filter.exact_ = true;
    rest = trim(rest.substr(1));
  }
  while (true) {
    auto comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    if (!entry.empty()) filter.entries_.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (filter.entries_.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                filter.describe() +
                    " names no interface: expected a comma-separated list of interface name "
                    "prefixes (eth,ib), exact names after = (=eth0), or exclusions after ^ "
                    "(^docker,lo or ^=docker0)");
  }
  return filter;
}

bool InterfaceFilter::entry_matches(const std::string& entry, std::string_view name) const {
  return exact_ ? name == entry : name.starts_with(entry);
}

bool InterfaceFilter::matches(std::string_view name) const {
  bool listed = std::any_of(entries_.begin(), entries_.end(),
                            [&](const std::string& entry) { return entry_matches(entry, name); });
  return listed != exclude_;
}

std::vector<std::string> InterfaceFilter::select(const std::vector<std::string>& interfaces) const {
  std::vector<std::string> chosen;
  auto add = [&](const std::string& name) {
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
  };
  if (exclude_) {
    for (const std::string& name : interfaces) {
      if (matches(name)) add(name);
    }
    return chosen;
  }
  // The list's order first: "ib,eth" prefers an ib interface even when the kernel lists eth0
  // before ib0.
  for (const std::string& entry : entries_) {
    for (const std::string& name : interfaces) {
      if (entry_matches(entry, name)) add(name);
    }
  }
  return chosen;
}

std::string InterfaceFilter::choose(const std::vector<std::string>& interfaces) const {
  std::vector<std::string> chosen = select(interfaces);
  if (chosen.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                describe() + ": no interface with an IP address matches (interfaces: " +
                    (interfaces.empty() ? "none" : join(interfaces)) + ")");
  }
  return chosen.front();
}

std::string InterfaceFilter::describe() const { return variable_ + "='" + value_ + "'"; }

}  // namespace weft::util

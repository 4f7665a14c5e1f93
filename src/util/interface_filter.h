// WEFT_SOCKET_IFNAME's interface filter: NCCL_SOCKET_IFNAME's syntax, parsed and matched against
// a list of interface names without touching a socket, so that every form is unit-testable.
//
// Syntax (NCCL's): a comma-separated list of entries.
//   eth,ib       interfaces whose names start with eth or ib (entries are prefixes by default)
//   =eth0,ib0    exactly eth0 or ib0 (a leading = makes every entry an exact name)
//   ^docker,lo   every interface except those whose names start with docker or lo
//   ^=docker0    every interface except docker0 (^ first, then =)
// Whitespace around the value, after ^ and = and around entries is ignored (Linux interface
// names cannot hold whitespace), and so are empty entries ("eth,,ib"). A value with no entry
// left ("", "^", "=", " , ") is malformed: an error naming the variable.
//
// Choice order (select): for a list of wanted interfaces, the entries in the order the list
// names them and, for each entry, the interfaces it matches in the order given (the kernel's,
// getifaddrs'); an interface is listed once, under the first entry that matches it. For a list
// of exclusions, the interfaces left in the order given. The first one is the one used.
//
// Thread-safety: a value; const methods may be called concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weft::util {

class InterfaceFilter {
 public:
  // Parses `value`; throws weft::Error(kInvalidArgument) naming `variable` and the value when
  // the list has no entry.
  static InterfaceFilter parse(std::string_view value,
                               std::string_view variable = "WEFT_SOCKET_IFNAME");

  bool excludes() const { return exclude_; }
  bool exact() const { return exact_; }
  // The entries, trimmed, without ^ and =, empty ones dropped, in the order written.
  const std::vector<std::string>& entries() const { return entries_; }

  // Whether interface `name` passes the filter.
  bool matches(std::string_view name) const;

  // The interfaces of `interfaces` (in the kernel's order) that pass, in choice order (above).
  std::vector<std::string> select(const std::vector<std::string>& interfaces) const;

  // select(interfaces).front(); throws weft::Error(kInvalidArgument) naming the variable, its
  // value and every interface in `interfaces` when none passes.
  std::string choose(const std::vector<std::string>& interfaces) const;

  // "WEFT_SOCKET_IFNAME='^=eth0'": how errors and logs name the setting.
  std::string describe() const;

 private:
  bool entry_matches(const std::string& entry, std::string_view name) const;

  std::string variable_;
  std::string value_;
  bool exclude_ = false;
  bool exact_ = false;
  std::vector<std::string> entries_;
};

}  // namespace weft::util

#include "api/slurm_lists.h"

#include <cstdint>
#include <optional>

#include "weft/error.h"

namespace weft::api {

namespace {

constexpr std::size_t kMaxDigits = 9;  // keeps every number, and lo..hi counts, in range

class ListParser {
 public:
  ListParser(std::string_view list, std::string_view variable, const char* example)
      : list_(list), variable_(variable), example_(example) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(ErrorCode::kInvalidArgument, std::string(variable_) + "='" + std::string(list_) +
                                                 "' is malformed: " + why +
                                                 " (expected a list like \"" + example_ + "\")");
  }

  // The list's items, split at the commas outside brackets.
  std::vector<std::string_view> items() const {
    if (list_.empty()) fail("it is empty");
    std::vector<std::string_view> items;
    std::size_t start = 0;
    std::optional<std::size_t> open;  // the '[' we are in
    for (std::size_t i = 0; i <= list_.size(); ++i) {
      char c = i < list_.size() ? list_[i] : ',';
      if (c == '[') {
        if (open) fail("'[' at offset " + std::to_string(i) + " opens inside another bracket");
        open = i;
      } else if (c == ']') {
        if (!open) fail("']' at offset " + std::to_string(i) + " closes no bracket");
        open.reset();
      } else if (c == ',' && !open) {
        if (i == start) fail("an empty entry at offset " + std::to_string(i));
        items.push_back(list_.substr(start, i - start));
        start = i + 1;
      }
      if (open && i == list_.size())
        fail("'[' at offset " + std::to_string(*open) + " is not closed");
    }
    return items;
  }

  // A number of at most kMaxDigits digits.
  uint64_t number(std::string_view digits, std::string_view where) const {
    if (digits.empty() || digits.size() > kMaxDigits) {
      fail("'" + std::string(where) + "' is not a number of 1 to " + std::to_string(kMaxDigits) +
           " digits");
    }
    uint64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') fail("'" + std::string(where) + "' is not a number");
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    return value;
  }

  void check_total(std::size_t total) const {
    if (total > kMaxSlurmListEntries) {
      fail("it expands to more than " + std::to_string(kMaxSlurmListEntries) + " entries");
    }
  }

 private:
  std::string_view list_;
  std::string_view variable_;
  const char* example_;
};

bool is_host_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

std::string padded(uint64_t value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// The numbers of one bracket group ("01-03,07"), zero-padded as written.
std::vector<std::string> expand_bracket(const ListParser& parser, std::string_view group) {
  std::vector<std::string> numbers;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= group.size(); ++i) {
    if (i < group.size() && group[i] != ',') continue;
    std::string_view range = group.substr(start, i - start);
    start = i + 1;
    if (range.empty()) parser.fail("an empty range in '[" + std::string(group) + "]'");
    std::size_t dash = range.find('-');
    std::string_view low_text = range.substr(0, dash);
    uint64_t low = parser.number(low_text, range);
    uint64_t high = low;
    if (dash != std::string_view::npos) high = parser.number(range.substr(dash + 1), range);
    if (high < low) parser.fail("the range '" + std::string(range) + "' runs backwards");
    parser.check_total(numbers.size() + (high - low + 1));
    for (uint64_t value = low; value <= high; ++value) {
      numbers.push_back(padded(value, low_text.size()));
    }
  }
  return numbers;
}

// Appends the hosts of one expression ("gpu-a[1-2]", "rack[1-2]-n[1-2]", "login5").
void expand_expression(const ListParser& parser, std::string_view expression,
                       std::vector<std::string>& hosts) {
  std::vector<std::string> expanded{""};
  std::size_t i = 0;
  while (i < expression.size()) {
    if (expression[i] == '[') {
      std::size_t close = expression.find(']', i);  // items() checked that it is there
      std::vector<std::string> numbers =
          expand_bracket(parser, expression.substr(i + 1, close - i - 1));
      parser.check_total(hosts.size() + expanded.size() * numbers.size());
      std::vector<std::string> combined;
      combined.reserve(expanded.size() * numbers.size());
      for (const std::string& prefix : expanded) {
        for (const std::string& number : numbers) combined.push_back(prefix + number);
      }
      expanded = std::move(combined);
      i = close + 1;
      continue;
    }
    std::size_t end = expression.find('[', i);
    if (end == std::string_view::npos) end = expression.size();
    std::string_view literal = expression.substr(i, end - i);
    for (char c : literal) {
      if (!is_host_character(c)) {
        parser.fail("'" + std::string(expression) + "' holds '" + std::string(1, c) +
                    "', which no host name has");
      }
    }
    for (std::string& host : expanded) host.append(literal);
    i = end;
  }
  for (std::string& host : expanded) hosts.push_back(std::move(host));
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(std::string_view list, std::string_view variable) {
  ListParser parser(list, variable, "node[01-03,07],login5");
  std::vector<std::string> hosts;
  for (std::string_view expression : parser.items()) expand_expression(parser, expression, hosts);
  return hosts;
}

std::vector<int> expand_slurm_tasks_per_node(std::string_view list, std::string_view variable) {
  ListParser parser(list, variable, "2(x3),1");
  std::vector<int> counts;
  for (std::string_view item : parser.items()) {
    std::size_t paren = item.find('(');
    uint64_t tasks = parser.number(item.substr(0, paren), item);
    uint64_t nodes = 1;
    if (paren != std::string_view::npos) {
      std::string_view repeat = item.substr(paren);
      if (repeat.size() < 4 || repeat.substr(0, 2) != "(x" || repeat.back() != ')') {
        parser.fail("'" + std::string(item) + "' is neither N nor N(xM)");
      }
      nodes = parser.number(repeat.substr(2, repeat.size() - 3), item);
      if (nodes == 0) parser.fail("'" + std::string(item) + "' repeats no node");
    }
    parser.check_total(counts.size() + nodes);
    counts.insert(counts.end(), nodes, static_cast<int>(tasks));
  }
  return counts;
}

}  // namespace weft::api

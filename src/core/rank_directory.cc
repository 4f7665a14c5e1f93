#include "core/rank_directory.h"

#include <charconv>
#include <map>

#include "weft/error.h"

namespace weft::core {
namespace {

[[noreturn]] void throw_bad_directory(const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "the rendezvous directory (weft/directory) " + why);
}

// The next '\n'-ended line from `at`; the rest of the value when it is the last.
std::string next_line(const std::string& value, std::size_t* at) {
  std::size_t end = value.find('\n', *at);
  std::string line = value.substr(*at, end == std::string::npos ? std::string::npos : end - *at);
  *at = end == std::string::npos ? value.size() : end + 1;
  return line;
}

bool parse_count(const std::string& text, std::size_t* out) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

std::string encode_rank_directory(const std::vector<std::string>& host_of_rank) {
  std::map<std::string, std::size_t> index_of;
  std::string hosts;
  std::string indexes;
  for (const std::string& host : host_of_rank) {
    auto [it, added] = index_of.emplace(host, index_of.size());
    if (added) hosts += host + "\n";
    indexes += (indexes.empty() ? "" : ",") + std::to_string(it->second);
  }
  return std::to_string(index_of.size()) + "\n" + hosts + indexes;
}

std::vector<std::string> parse_rank_directory(const std::string& value, int size) {
  std::size_t at = 0;
  std::size_t host_count = 0;
  std::string count_line = next_line(value, &at);
  if (!parse_count(count_line, &host_count) || host_count == 0 ||
      host_count > static_cast<std::size_t>(size)) {
    throw_bad_directory("does not start with a host count from 1 to " + std::to_string(size) +
                        " ('" + count_line.substr(0, 32) + "')");
  }
  std::vector<std::string> hosts;
  for (std::size_t h = 0; h < host_count; ++h) {
    if (at >= value.size()) {
      throw_bad_directory("names " + std::to_string(h) + " of its " + std::to_string(host_count) +
                          " hosts");
    }
    hosts.push_back(next_line(value, &at));
  }
  std::vector<std::string> host_of_rank;
  std::string indexes = next_line(value, &at);
  std::size_t begin = 0;
  while (begin <= indexes.size() && static_cast<int>(host_of_rank.size()) <= size) {
    std::size_t end = indexes.find(',', begin);
    if (end == std::string::npos) end = indexes.size();
    std::size_t index = 0;
    if (!parse_count(indexes.substr(begin, end - begin), &index) || index >= host_count) {
      throw_bad_directory("gives rank " + std::to_string(host_of_rank.size()) +
                          " a host index that is not below " + std::to_string(host_count));
    }
    host_of_rank.push_back(hosts[index]);
    begin = end + 1;
  }
  if (static_cast<int>(host_of_rank.size()) != size || at < value.size()) {
    throw_bad_directory("does not place exactly the job's " + std::to_string(size) + " ranks");
  }
  return host_of_rank;
}

}  // namespace weft::core

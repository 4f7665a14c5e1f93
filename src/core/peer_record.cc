#include "core/peer_record.h"

#include "weft/error.h"

namespace weft::core {

std::string encode_peer_record(const PeerRecord& record) {
  std::string value = record.host;
  for (const auto& [kind, card] : record.cards) value += "\n" + kind + "=" + card;
  return value;
}

PeerRecord parse_peer_record(const std::string& value, int rank) {
  const std::string what = "the rendezvous record of rank " + std::to_string(rank);
  PeerRecord record;
  std::size_t end = value.find('\n');
  record.host = value.substr(0, end);
  while (end != std::string::npos) {
    const std::size_t begin = end + 1;
    end = value.find('\n', begin);
    const std::string line = value.substr(begin, end == std::string::npos ? end : end - begin);
    const std::size_t equals = line.find('=');
    if (equals == 0 || equals == std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + " has a line that is not path=card: '" + line + "' (in '" + value + "')");
    }
    if (!record.cards.emplace(line.substr(0, equals), line.substr(equals + 1)).second) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + " names path " + line.substr(0, equals) + " twice: '" + value + "'");
    }
  }
  return record;
}

}  // namespace weft::core

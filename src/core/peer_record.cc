#include "core/peer_record.h"

#include "weft/error.h"

namespace weft::core {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> pieces;
  std::size_t begin = 0;
  for (;;) {
    std::size_t end = text.find(separator, begin);
    pieces.push_back(
        text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return pieces;
    begin = end + 1;
  }
}

}  // namespace

std::string encode_peer_record(const PeerRecord& record) {
  std::string addresses;
  for (const util::SocketAddress& address : record.addresses) {
    addresses += (addresses.empty() ? "" : ",") + address.to_string();
  }
  std::string value = addresses + "\n" + record.host;
  if (!record.mailbox.empty()) value += "\n" + record.mailbox;
  return value;
}

PeerRecord parse_peer_record(const std::string& value, int rank) {
  const std::string what = "the rendezvous record of rank " + std::to_string(rank);
  std::vector<std::string> lines = split(value, '\n');
  PeerRecord record;
  for (const std::string& text : split(lines[0], ',')) {
    if (text.empty()) continue;
    try {
      auto [host, port] = util::split_host_port(text, what);
      record.addresses.push_back(util::resolve(host, port));
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + " has an address that is not host:port ('" + text + "'): " + e.message());
    }
  }
  if (record.addresses.empty()) {
    throw Error(ErrorCode::kInvalidArgument, what + " names no address: '" + value + "'");
  }
  if (lines.size() > 1) record.host = lines[1];
  if (lines.size() > 2) record.mailbox = lines[2];
  return record;
}

}  // namespace weft::core

#include "transport/tcp/streams.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "util/local_interfaces.h"
#include "weft/error.h"

namespace weft::transport {

namespace {

constexpr uint64_t kPage = 4096;
constexpr int kMbpsPerStream = 10'000;
constexpr uint32_t kMostAutoStreams = 8;

}  // namespace

uint32_t stripes_for(uint64_t bytes, uint32_t ready) {
  const uint64_t worth = bytes / kSmallestStripe;
  return static_cast<uint32_t>(
      std::clamp<uint64_t>(std::min<uint64_t>(worth, ready), 1, kMaxStripes));
}

Piece piece_of(uint64_t bytes, uint32_t stripes, uint32_t index) {
  stripes = std::max<uint32_t>(stripes, 1);
  uint64_t size = (bytes + stripes - 1) / stripes;
  size = (size + kPage - 1) / kPage * kPage;
  const uint64_t begin = std::min(bytes, size * index);
  const uint64_t end = std::min(bytes, begin + size);
  return Piece{begin, end - begin};
}

uint32_t parse_stream_setting(std::string_view value) {
  if (value.empty() || value == "auto") return 0;
  uint32_t count = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), count);
  if (error != std::errc() || end != value.data() + value.size() || count < 1 ||
      count > kMaxStripes) {
    throw Error(ErrorCode::kInvalidArgument,
                "WEFT_SOCKET_NSTREAMS=" + std::string(value) +
                    ": expected auto or a number of connections per peer from 1 to " +
                    std::to_string(kMaxStripes));
  }
  return count;
}

uint32_t auto_stream_count(int speed_mbps, std::string_view driver) {
  if (driver == "ena") return kMostAutoStreams;
  if (speed_mbps <= 0) return 1;
  return std::clamp<uint32_t>(static_cast<uint32_t>(speed_mbps / kMbpsPerStream), 1,
                              kMostAutoStreams);
}

LinkFacts link_of(const util::SocketAddress& local) {
  LinkFacts facts;
  const std::string host = local.host();
  for (const util::InterfaceAddress& interface : util::local_interface_addresses()) {
    if (interface.address.host() == host) {
      facts.interface = interface.name;
      break;
    }
  }
  if (facts.interface.empty()) return facts;
  namespace fs = std::filesystem;
  const fs::path device = fs::path("/sys/class/net") / facts.interface;
  // Reading `speed` fails (EINVAL) for a link that is down or has no speed: -1 stays.
  std::ifstream speed(device / "speed");
  if (int mbps = 0; speed >> mbps) facts.speed_mbps = mbps;
  std::error_code error;
  fs::path driver = fs::read_symlink(device / "device" / "driver", error);
  if (!error) facts.driver = driver.filename().string();
  return facts;
}

}  // namespace weft::transport

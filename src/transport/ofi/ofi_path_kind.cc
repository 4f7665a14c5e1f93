#include "transport/ofi/ofi_path_kind.h"

#include <filesystem>

#include "transport/ofi/ofi_path.h"
#include "util/log.h"
#include "util/settings.h"
#include "util/socket.h"

namespace weft::transport {

namespace {

const char kHexDigits[] = "0123456789abcdef";

std::string to_hex(const std::vector<uint8_t>& bytes) {
  std::string text;
  for (uint8_t byte : bytes) {
    text += kHexDigits[byte >> 4];
    text += kHexDigits[byte & 15];
  }
  return text;
}

std::vector<uint8_t> from_hex(const std::string& text, int rank) {
  auto digit = [&](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(ErrorCode::kInvalidArgument,
                "the ofi address of rank " + std::to_string(rank) + " is not hex: '" + text + "'");
  };
  if (text.size() % 2) digit('x');
  std::vector<uint8_t> bytes;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    bytes.push_back(static_cast<uint8_t>(digit(text[i]) << 4 | digit(text[i + 1])));
  }
  return bytes;
}

// Whether this host has a device that a fabric provider drives.
bool has_fabric_hardware() {
  std::error_code ignored;
  if (std::filesystem::exists("/sys/class/infiniband", ignored) &&
      !std::filesystem::is_empty("/sys/class/infiniband", ignored)) {
    return true;
  }
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cxi", 0) == 0 || name.rfind("hfi1", 0) == 0) return true;
  }
  return false;
}

// The numeric address of this host towards the rendezvous host, for IP providers.
std::string source_address(const std::string& route_hint) {
  if (route_hint.empty()) return "127.0.0.1";
  try {
    return util::local_address_towards(route_hint).host();
  } catch (const Error&) {
    return "";
  }
}

class OfiRendezvous final : public PathRendezvous {
 public:
  OfiRendezvous(OfiPath& path, bool every_peer) : path_(path), every_peer_(every_peer) {}

  std::string card() const override { return to_hex(path_.address()); }

  void meet(const PeerDirectory& peers) override {
    const std::size_t size = peers.hosts.size();
    std::vector<bool> reached(size);
    std::vector<std::optional<std::vector<uint8_t>>> known(size);
    for (std::size_t rank = 0; rank < size; ++rank) {
      const int peer = static_cast<int>(rank);
      reached[rank] = peer != peers.rank && (every_peer_ || !peers.same_host(peer));
      if (peers.cards[rank]) known[rank] = from_hex(*peers.cards[rank], peer);
    }
    path_.set_peers(std::move(reached), std::move(known),
                    [read_card = peers.read_card](int peer) -> std::optional<std::vector<uint8_t>> {
                      std::optional<std::string> card = read_card(peer);
                      if (!card) return std::nullopt;
                      return from_hex(*card, peer);
                    });
  }

 private:
  OfiPath& path_;
  const bool every_peer_;
};

}  // namespace

OpenedPath open_ofi_path(const PathSetup& setup) {
  const std::string choice = util::setting_choice("WEFT_TRANSPORT");
  const std::string provider = util::setting_string("WEFT_OFI_PROVIDER");
  const bool forced = choice == "ofi";
  if (choice == "tcp" || setup.world_size < 2) return {};
  if (!forced && provider.empty() && !has_fabric_hardware()) return {};
  OfiPathOptions options;
  options.rank = setup.rank;
  options.world_size = setup.world_size;
  options.endpoint.provider = provider;
  options.endpoint.fabric_only = !forced && provider.empty();
  options.endpoint.source_address = source_address(setup.route_hint);
  std::unique_ptr<OfiPath> path;
  try {
    path = std::make_unique<OfiPath>(options, *setup.events);
  } catch (const Error& e) {
    if (forced) {
      throw Error(ErrorCode::kSystem, "WEFT_TRANSPORT=ofi: " + e.message(),
                  ErrorContext{.rank = setup.rank, .op = "init_process_group"});
    }
    util::log_info(util::Subsys::kTransport, [&] {
      return "rank " + std::to_string(setup.rank) + ": no ofi path (" + e.message() +
             "); TCP between hosts";
    });
    return {};
  }
  util::log_info(util::Subsys::kTransport, [&] {
    return "rank " + std::to_string(setup.rank) + ": ofi path through provider " +
           path->provider() + (forced ? " for every peer (WEFT_TRANSPORT=ofi)" : " between hosts");
  });
  auto rendezvous = std::make_unique<OfiRendezvous>(*path, forced);
  return {std::move(path), std::move(rendezvous)};
}

}  // namespace weft::transport

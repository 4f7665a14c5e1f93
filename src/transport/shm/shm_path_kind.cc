#include "transport/shm/shm_path_kind.h"

#include "transport/shm/shm_path.h"
#include "util/log.h"
#include "util/settings.h"

namespace weft::transport {

namespace {

class ShmRendezvous final : public PathRendezvous {
 public:
  explicit ShmRendezvous(ShmPath& path) : path_(path) {}

  std::string card() const override { return path_.address().to_string(); }

  void meet(const PeerDirectory& peers) override {
    std::vector<std::optional<MailboxAddress>> mailboxes(peers.hosts.size());
    for (std::size_t rank = 0; rank < peers.hosts.size(); ++rank) {
      const int peer = static_cast<int>(rank);
      MailboxAddress mailbox;
      // Only ranks of this host are reached through shared memory.
      if (peers.same_host(peer) && peers.cards[rank] &&
          MailboxAddress::parse(*peers.cards[rank], &mailbox)) {
        mailboxes[rank] = mailbox;
      }
    }
    path_.set_local_peers(mailboxes);
  }

 private:
  ShmPath& path_;
};

}  // namespace

OpenedPath open_shm_path(const PathSetup& setup) {
  if (util::setting_choice("WEFT_TRANSPORT") != "auto" || setup.world_size < 2) return {};
  ShmPathOptions options;
  options.rank = setup.rank;
  options.world_size = setup.world_size;
  options.job_token = setup.job_token;
  options.single_copy = util::setting_choice("WEFT_SHM_SINGLE_COPY") != "off";
  try {
    auto path = std::make_unique<ShmPath>(options, *setup.events);
    auto rendezvous = std::make_unique<ShmRendezvous>(*path);
    return {std::move(path), std::move(rendezvous)};
  } catch (const Error& e) {
    util::log_info(util::Subsys::kShm, [&] {
      return "rank " + std::to_string(setup.rank) + ": no shared memory for messages (" +
             e.message() + "); TCP only";
    });
    return {};
  }
}

}  // namespace weft::transport

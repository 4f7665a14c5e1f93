#include "core/world.h"

#include <algorithm>
#include <thread>

#include "core/bootstrap.h"
#include "core/communicator.h"
#include "util/log.h"
#include "util/settings.h"

namespace weft::core {

std::shared_ptr<World> World::join(WorldOptions options) {
  std::shared_ptr<World> world(new World());
  world->rank_ = options.rank;
  world->size_ = options.size;
  world->timeout_ = options.timeout;
  world->spin_us_ = util::setting_int("WEFT_SPIN_US");
  world->store_server_ = std::move(options.store_server);
  world->store_ = options.store;
  world->deadline_store_ = std::make_unique<DeadlineStore>(*world->store_);
  Rendezvous rendezvous = rendezvous_with_peers(options);
  world->transport_ = std::move(rendezvous.transport);
  world->hosts_ = std::move(rendezvous.hosts);
  World* raw = world.get();
  world->transport_->set_listener(transport::TransportListener{
      [raw](int peer, std::shared_ptr<const Error> error) { raw->on_peer_failed(peer, error); },
      [raw](uint64_t context, std::shared_ptr<const Error> error) {
        raw->on_context_aborted(context, error);
      }});
  return world;
}

World::~World() {
  auto flush_for = std::min(timeout_, std::chrono::milliseconds(10'000));
  if (transport_) transport_->shutdown(std::chrono::steady_clock::now() + flush_for);
  // Its connection too is one the store server waits to see closed.
  deadline_store_.reset();
  store_.reset();
  if (store_server_) {
    // The other ranks may still be reading the store (their own shutdown): let them finish.
    auto until = std::chrono::steady_clock::now() + flush_for;
    while (store_server_->num_clients() > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void World::attach(uint64_t context, Communicator* communicator) {
  util::RecursiveMutexLock lock(mutex_);
  communicators_[context] = communicator;
}

void World::detach(uint64_t context) {
  util::RecursiveMutexLock lock(mutex_);
  communicators_.erase(context);
}

void World::on_peer_failed(int peer, std::shared_ptr<const Error> error) {
  util::RecursiveMutexLock lock(mutex_);
  // A copy: delivering may attach or detach nothing, but stays safe if it does.
  auto communicators = communicators_;
  for (auto& [context, communicator] : communicators) communicator->on_peer_failed(peer, error);
}

void World::on_context_aborted(uint64_t context, std::shared_ptr<const Error> error) {
  util::RecursiveMutexLock lock(mutex_);
  auto it = communicators_.find(context & ~uint64_t{1});
  if (it != communicators_.end()) it->second->on_context_aborted(context, error);
}

}  // namespace weft::core

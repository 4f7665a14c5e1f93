#include "core/communicator.h"

#include <algorithm>
#include <utility>

#include "core/clock_alignment.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/settings.h"

namespace weft::core {

namespace {

uint64_t next_serial() {
  static std::atomic<uint64_t> made{0};
  return made.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::shared_ptr<Communicator> Communicator::create(std::shared_ptr<World> world, std::string name,
                                                   std::vector<int> world_ranks,
                                                   uint64_t context_base,
                                                   std::chrono::milliseconds timeout) {
  std::shared_ptr<Communicator> communicator(new Communicator(
      std::move(world), std::move(name), std::move(world_ranks), context_base, timeout));
  communicator->world_->attach(context_base, communicator.get());
  // The world group (context 0, made by every rank at init) aligns the timeline's clocks.
  if (RankTrace* trace = communicator->recorder_.trace(); trace && context_base == 0) {
    World& w = *communicator->world_;
    try {
      std::vector<bool> same_clock(w.size());
      for (int r = 0; r < w.size(); ++r) same_clock[r] = w.host_of(r) == w.host_of(0);
      trace->set_clock_offset_ns(
          estimate_clock_offset_ns(w.store(), w.rank(), w.size(), same_clock));
    } catch (const Error& error) {
      util::log_warn(util::Subsys::kInit, [&] {
        return std::string("WEFT_TRACE: cannot align this rank's clock with rank 0's: ") +
               error.what();
      });
    }
  }
  return communicator;
}

Communicator::Communicator(std::shared_ptr<World> world, std::string name,
                           std::vector<int> world_ranks, uint64_t context_base,
                           std::chrono::milliseconds timeout)
    : world_(std::move(world)),
      name_(std::move(name)),
      serial_(next_serial()),
      world_ranks_(std::move(world_ranks)),
      context_base_(context_base),
      timeout_(timeout.count() > 0 ? timeout : world_->timeout()),
      recorder_(name_, world_.get(), world_->rank(), world_->size()),
      board_(world_->deadline_store(), context_base_, group_rank_of(world_->rank()), size()) {
  rank_ = group_rank_of(world_->rank());
  std::vector<std::string> identities;
  for (int group_rank = 0; group_rank < size(); ++group_rank) {
    const std::string& host = world_->host_of(world_ranks_[group_rank]);
    auto known = std::find(identities.begin(), identities.end(), host);
    int index = static_cast<int>(known - identities.begin());
    if (known == identities.end()) {
      identities.push_back(host);
      layout_.members.emplace_back();
    }
    layout_.host_of.push_back(index);
    layout_.members[index].push_back(group_rank);
  }
  const bool shm_allowed = util::setting_choice("WEFT_TRANSPORT") == "auto";
  single_host_ = size() > 1 && layout_.hosts() == 1 && shm_allowed;
  spans_hosts_with_neighbours_ = shm_allowed && layout_.hosts() > 1 && layout_.largest_host() > 1;
  algorithm_setting_ = util::setting_string("WEFT_ALGO");
  network_settings_ = util::read_network_settings();
}

int HostLayout::largest_host() const {
  std::size_t largest = 0;
  for (const auto& host : members) largest = std::max(largest, host.size());
  return static_cast<int>(largest);
}

HostGroups& Communicator::host_groups() {
  util::MutexLock lock(host_groups_mutex_);
  if (host_groups_) return *host_groups_;
  auto derive = [this](uint64_t salt) {
    uint64_t x = (context_base_ ^ 0x686F737473ull) * 0x9E3779B97F4A7C15ull + salt;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (x & ~uint64_t{1}) | 2;
  };
  auto groups = std::make_unique<HostGroups>();
  int host = layout_.host_of[rank_];
  std::vector<int> local_world_ranks;
  for (int member : layout_.members[host]) local_world_ranks.push_back(world_ranks_[member]);
  // One context per host: the hosts' windows must not meet in the store either.
  groups->local = Communicator::create(world_, name_ + "/host" + std::to_string(host),
                                       std::move(local_world_ranks),
                                       derive(2 + static_cast<uint64_t>(host)), timeout_);
  if (layout_.members[host].front() == rank_) {
    std::vector<int> leader_world_ranks;
    for (const auto& members : layout_.members) {
      leader_world_ranks.push_back(world_ranks_[members.front()]);
    }
    groups->leaders = Communicator::create(world_, name_ + "/leaders",
                                           std::move(leader_world_ranks), derive(1), timeout_);
  }
  host_groups_ = std::move(groups);
  made_host_groups_.store(host_groups_.get(), std::memory_order_release);
  return *host_groups_;
}

Communicator::~Communicator() { world_->detach(context_base_); }

int Communicator::group_rank_of(int world_rank) const {
  auto it = std::find(world_ranks_.begin(), world_ranks_.end(), world_rank);
  return it == world_ranks_.end() ? -1 : static_cast<int>(it - world_ranks_.begin());
}

transport::RequestPtr Communicator::post_send(Channel channel, int peer, uint64_t tag,
                                              const OpSignature& op, const void* data,
                                              std::size_t bytes) {
  auto request =
      transport::make_request(transport::Request::Kind::kSend, world_ranks_[peer], context(channel),
                              tag, op.pack(), const_cast<void*>(data), bytes);
  request->operation_tagged = channel == Channel::kCollective;
  world_->transport().post_send(request);
  return request;
}

transport::RequestPtr Communicator::post_recv(Channel channel, int peer, uint64_t tag,
                                              const OpSignature& op, void* data,
                                              std::size_t bytes) {
  int world_peer = peer == transport::kAnyPeer ? transport::kAnyPeer : world_ranks_[peer];
  auto request = transport::make_request(transport::Request::Kind::kRecv, world_peer,
                                         context(channel), tag, op.pack(), data, bytes);
  request->operation_tagged = channel == Channel::kCollective;
  world_->transport().post_recv(request);
  return request;
}

std::chrono::steady_clock::time_point Communicator::deadline_from_now() const {
  return util::deadline_after(timeout_);
}

void Communicator::progress(transport::Request& request) {
  if (!request.done()) world_->transport().poll(request);
}

void Communicator::cancel(Request& request, std::shared_ptr<const Error> reason) {
  world_->transport().cancel(request, std::move(reason));
}

ErrorContext Communicator::context_for(const OpInfo& info) const {
  ErrorContext context;
  context.group = name_;
  context.rank = rank_;
  context.size = size();
  context.op = info.name;
  context.seq = info.seq;
  context.peer = info.peer;
  if (info.peer >= 0) {
    context.peer_address = world_->transport().peer_address(world_ranks_[info.peer]);
  }
  context.bytes = info.bytes;
  return context;
}

bool Communicator::poll_then_sleep(transport::Request& request,
                                   std::chrono::steady_clock::time_point deadline) {
  transport::Transport& transport = world_->transport();
  transport.start_polling(request);
  bool polling = true;
  std::chrono::steady_clock::time_point slept_from{};
  auto stop_polling = [&] {
    if (std::exchange(polling, false)) transport.stop_polling(request);
  };
  auto before_sleep = [&] {
    slept_from = std::chrono::steady_clock::now();
    stop_polling();
  };
  bool polled = transport.completed_by_polling(request);
  bool done = request.wait(
      deadline, world_->spin_us(polled), [&] { return transport.poll(request); }, before_sleep,
      /*may_yield=*/!(polled && transport.pollers_have_own_cores()));
  stop_polling();
  if (!polled && done && slept_from != std::chrono::steady_clock::time_point{}) {
    world_->socket_wait_slept(std::chrono::steady_clock::now() - slept_from);
  }
  return done;
}

void Communicator::wait(transport::Request& request, const OpInfo& info,
                        std::chrono::steady_clock::time_point deadline) {
  // A finished request registers no poller: that is a shared line other ranks read.
  if (!request.done() && !wait_reporting(request, info, deadline)) {
    std::string what = describe_timeout(request, info);
    if (what.empty() && request.failed()) {
      // Another rank's verdict (its abort, a death) ended the wait while this rank was finding
      // out who was missing: that verdict leads, and this rank's own view follows it.
      throw describe_failure(
          request, info,
          "; here, on rank " + std::to_string(rank_) + ", " + timeout_head(request, info));
    }
    if (!what.empty()) {
      auto error = std::make_shared<const Error>(ErrorCode::kTimeout, what, context_for(info));
      if (world_->transport().cancel(request, error) || !finishes_uncancelled(request)) {
        // A collective's timeout is dumped by fail_collectives, once the launcher recorded it.
        if (!request.operation_tagged) dump_flight_recorder(*error);
        throw *error;
      }
    }
  }
  if (request.failed()) throw describe_failure(request, info);
}

bool Communicator::finishes_uncancelled(transport::Request& request) {
  // Too late to withdraw: the transfer is under way (a peer reading our buffer, another thread
  // of ours filling it). The buffer is the caller's again only when it ends, which it does
  // unless that peer stops mid-read; then the timeout stands and the peer reads what it reads.
  return request.done() || poll_then_sleep(request, util::deadline_after(kFinishingGrace));
}

std::chrono::steady_clock::time_point Communicator::report_point(
    std::chrono::steady_clock::time_point deadline, const OpInfo& info) const {
  // Arithmetic on the deadline, not a clock read: it is `timeout` after the wait (or the call)
  // began.
  std::chrono::milliseconds timeout = std::min(timeout_of(info), util::kFarAway);
  return deadline - timeout + ProgressBoard::report_after(timeout);
}

std::chrono::steady_clock::time_point Communicator::report_until(
    std::chrono::steady_clock::time_point deadline, const OpInfo& info) const {
  // A report holds up the wait it is made from (the waiting thread writes it), so a store out
  // of reach may cost that wait report_after() of its progress, never its deadline.
  return std::min(deadline, util::deadline_after(ProgressBoard::report_after(timeout_of(info))));
}

bool Communicator::wait_reporting(transport::Request& request, const OpInfo& info,
                                  std::chrono::steady_clock::time_point deadline) {
  const bool collective = info.seq >= 0;
  if (collective && board_.reported(info.seq)) return poll_then_sleep(request, deadline);
  auto report_at = report_point(deadline, info);
  if (report_at >= deadline) return poll_then_sleep(request, deadline);
  if (poll_then_sleep(request, report_at)) return true;
  if (collective) {
    board_.report_collective(info.name, info.seq, report_until(deadline, info));
    return poll_then_sleep(request, deadline);
  }
  std::string what = point_to_point_entry(info.name, info.peer);
  board_.report_point_to_point(what, report_until(deadline, info));
  bool done = poll_then_sleep(request, deadline);
  board_.end_point_to_point(what);
  return done;
}

std::string Communicator::timeout_head(const transport::Request& request,
                                       const OpInfo& info) const {
  const std::string peer = info.peer >= 0 ? "rank " + std::to_string(info.peer) : "any rank";
  const bool recv = request.kind == transport::Request::Kind::kRecv;
  const std::string within =
      " did not finish within its " + std::to_string(timeout_of(info).count()) + " ms timeout";
  if (info.seq >= 0) {
    return std::string(info.name) + " #" + std::to_string(info.seq) + within + " (waiting for " +
           (recv ? "a message from " + peer : peer + " to take a message") + ")";
  }
  return std::string(info.name) + within +
         (recv ? " (no message from " + peer + ")" : " (" + peer + " did not take the message)");
}

std::string Communicator::describe_timeout(transport::Request& request, const OpInfo& info) {
  const std::string head = timeout_head(request, info);
  const bool recv = request.kind == transport::Request::Kind::kRecv;
  // Long enough for a member that arrived just before this timeout to report (it does so
  // report_after() into its wait), short enough that the error still comes promptly.
  const auto until = util::deadline_after(ProgressBoard::report_after(timeout_of(info)));
  if (info.seq >= 0) {
    board_.report_collective(info.name, info.seq, until);  // so that the others see me there
    ProgressBoard::Diagnosis diagnosis = board_.diagnose(
        info.name, info.seq, until,
        [&](util::Clock::time_point pause_until) { return poll_then_sleep(request, pause_until); });
    if (diagnosis.stopped) return "";
    if (diagnosis.text.empty()) {
      return head + ": which ranks had not reached it is unknown (the store did not answer)";
    }
    return head + ": " + diagnosis.text;
  }
  std::string seen =
      info.peer >= 0 ? describe_peer(info.peer, read_board({info.peer}, until)[info.peer]) : "";
  if (!seen.empty()) return head + ": " + seen;
  return head + (recv ? ": the peer is stuck, slow, or never sends it"
                      : ": the peer is stuck, slow, or never receives it");
}

std::vector<Sighting> Communicator::read_board(const std::vector<int>& members,
                                               std::chrono::steady_clock::time_point until) {
  std::vector<Sighting> seen(size());
  for (int m : members) seen[m] = board_.read(m, until);
  return seen;
}

Error Communicator::describe_failure(const transport::Request& request, const OpInfo& info,
                                     const std::string& own_view) const {
  const Error& cause = *request.error();
  ErrorContext context = context_for(info);
  if (cause.code() == ErrorCode::kMismatch) {
    OpSignature mine = OpSignature::unpack(request.signature);
    OpSignature theirs = OpSignature::unpack(request.received_signature);
    int sender = group_rank_of(request.source);
    std::string message = "rank " + std::to_string(sender) + " sent " + theirs.describe() + " (" +
                          std::to_string(request.received_bytes) + " bytes) but rank " +
                          std::to_string(rank_) + " called " + mine.describe() + " (" +
                          std::to_string(request.bytes) + " bytes)";
    return Error(ErrorCode::kMismatch, message, context);
  }
  if (cause.context().op.empty()) {
    // A transport-level error: keep its message, give it this group's context.
    context.peer_address =
        cause.context().peer_address.empty() ? context.peer_address : cause.context().peer_address;
    return Error(cause.code(), cause.message() + own_view, context, cause.earlier_cause());
  }
  if (own_view.empty()) return cause.with_context(context);
  return Error(cause.code(), cause.message() + own_view, cause.context(), cause.earlier_cause())
      .with_context(context);
}

void Communicator::abort(const std::string& reason) {
  auto error =
      std::make_shared<const Error>(ErrorCode::kAborted, "group '" + name_ + "' aborted by rank " +
                                                             std::to_string(rank_) + ": " + reason);
  {
    util::MutexLock lock(mutex_);
    if (!aborted_) aborted_ = error;
    if (!broken_collectives_) broken_collectives_ = error;
    troubled_.store(true, std::memory_order_release);
  }
  tell_shared_memory_waiters(error);
  world_->transport().abort_context(context(Channel::kPointToPoint), error);
  world_->transport().abort_context(context(Channel::kCollective), error);
}

void Communicator::on_context_aborted(uint64_t context_id, std::shared_ptr<const Error> error) {
  bool failure = false;
  {
    util::MutexLock lock(mutex_);
    if (context_id == context(Channel::kPointToPoint) && !aborted_) aborted_ = error;
    if (!broken_collectives_) broken_collectives_ = error;
    troubled_.store(true, std::memory_order_release);
    // A peer's failed collective aborts only the collective context; a peer's abort() aborts
    // the point-to-point one first (the news arrive in order): that is no failure to report.
    failure = context_id == context(Channel::kCollective) && !aborted_;
  }
  if (failure) recorder_.dump(name_, rank_, world_->rank(), *error);
  // This rank may be the only member of its host that hears it (the others may share no
  // socket with the rank that gave up): pass it on through the window, or they would learn
  // only that this rank left, not why.
  if (context_id == context(Channel::kCollective)) tell_shared_memory_waiters(error);
}

Error Communicator::with_host_group_ranks_explained(const Error& error) const {
  const HostGroups* groups = made_host_groups();
  if (!groups) return error;
  const Communicator* inner = nullptr;
  for (const Communicator* group : {groups->local.get(), groups->leaders.get()}) {
    if (group && group->name() == error.context().group) inner = group;
  }
  if (!inner) return error;
  // The whole correspondence, not only the ranks the message names: messages of the transport
  // name world ranks, and only the reader can tell which is which.
  constexpr int kListed = 16;
  std::string legend;
  for (int rank = 0; rank < std::min(inner->size(), kListed); ++rank) {
    legend += (rank ? ", rank " : "rank ") + std::to_string(rank) + " is rank " +
              std::to_string(group_rank_of(inner->world_rank_of(rank)));
  }
  if (inner->size() > kListed) legend += ", ...";
  return Error(error.code(),
               error.message() + " (in " + inner->name() + ", " + legend + " of '" + name_ + "')",
               error.context(), error.earlier_cause());
}

std::string Communicator::describe_rank(int group_rank) const {
  const int world_rank = world_rank_of(group_rank);
  std::string text = "rank " + std::to_string(group_rank);
  if (world_rank != group_rank) text += " (global rank " + std::to_string(world_rank) + ")";
  return text;
}

void Communicator::on_peer_failed(int world_peer, std::shared_ptr<const Error> error) {
  // Point-to-point with the other members still works; collectives need everyone.
  if (group_rank_of(world_peer) < 0) return;
  dump_flight_recorder(*error);
  fail_collectives(std::move(error));
}

void Communicator::fail_collectives(std::shared_ptr<const Error> cause) {
  {
    util::MutexLock lock(mutex_);
    if (!broken_collectives_) broken_collectives_ = cause;
    troubled_.store(true, std::memory_order_release);
  }
  dump_flight_recorder(*cause);
  tell_shared_memory_waiters(cause);
  // Wakes this rank's pending collective receives and tells the connected members.
  world_->transport().abort_context(context(Channel::kCollective), std::move(cause));
}

void Communicator::dump_flight_recorder(const Error& cause) {
  // The user's own abort is no failure to report; but once a failure was reported, the files
  // are refreshed whatever ends the ops (the op that failed has now recorded how).
  if (cause.root_cause().code() == ErrorCode::kAborted && !recorder_.dumped()) return;
  recorder_.dump(name_, rank_, world_->rank(), cause);
}

void Communicator::tell_shared_memory_waiters(const std::shared_ptr<const Error>& cause) {
  // Members waiting in the shared-memory window learn it there (they may share no socket).
  if (LocalWindow* window = open_window_.load(std::memory_order_acquire)) {
    window->poison(cause->code(), cause->message());
  }
  // So do the host groups a hierarchical collective of this group may be waiting in.
  if (HostGroups* groups = made_host_groups_.load(std::memory_order_acquire)) {
    groups->local->fail_collectives(cause);
    if (groups->leaders) groups->leaders->fail_collectives(cause);
  }
}

void Communicator::throw_if_aborted(const OpInfo& info) const {
  util::MutexLock lock(mutex_);
  if (aborted_) throw aborted_->with_context(context_for(info));
}

void Communicator::throw_if_collectives_broken(const OpInfo& info) const {
  util::MutexLock lock(mutex_);
  if (!broken_collectives_) return;
  throw Error(broken_collectives_->code() == ErrorCode::kPeerFailure ? ErrorCode::kPeerFailure
                                                                     : ErrorCode::kAborted,
              "the group's collectives stopped after an earlier failure", context_for(info),
              broken_collectives_);
}

uint64_t Communicator::next_child_context() {
  // splitmix64 of (parent context, child number): members agree without talking.
  uint64_t x = context_base_ * 0x9E3779B97F4A7C15ull + (++children_) + 0x632BE59BD9B4E019ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (x & ~uint64_t{1}) | 2;  // even, and never the world's 0
}

Communicator::ShrinkRound Communicator::next_shrink_round() {
  int epoch = ++shrinks_;
  // splitmix64 as above, on a different stream ("shrink" salts the parent's context).
  uint64_t x = (context_base_ ^ 0x736872696E6Bull) * 0xD1B54A32D192ED03ull +
               static_cast<uint64_t>(epoch) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return {epoch, (x & ~uint64_t{1}) | 2};
}

}  // namespace weft::core

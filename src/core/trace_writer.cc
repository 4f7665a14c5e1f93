#include "core/trace_writer.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "util/log.h"
#include "util/settings.h"

namespace weft::core {

namespace {

// The live traces by World, and the exit hook that writes those still alive at exit. Leaked on
// purpose: the exit hook runs while statics are being destroyed.
struct Registry {
  util::Mutex mutex;
  std::map<const void*, std::weak_ptr<RankTrace>> traces WEFT_GUARDED_BY(mutex);
};

Registry& registry() {
  static Registry* made = new Registry;
  return *made;
}

void write_live_traces() {
  std::vector<std::shared_ptr<RankTrace>> alive;
  {
    util::MutexLock lock(registry().mutex);
    for (auto& [world, trace] : registry().traces) {
      if (auto held = trace.lock()) alive.push_back(std::move(held));
    }
  }
  for (const auto& trace : alive) {
    trace->stop_spilling();
    trace->write();
  }
}

void append_escaped(std::string& out, const std::string& text) {
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Nanoseconds as microseconds with three decimals, the unit of Chrome traces.
std::string micros(int64_t ns) {
  char text[40];
  std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>((ns < 0 ? -ns : ns) % 1000));
  if (ns < 0 && ns > -1000) return "-" + std::string(text);
  return text;
}

// Turns a timeline's ticks into this rank's steady nanoseconds.
struct TickScale {
  TimelineClock::Pair first;
  TimelineClock::Pair last;
  int64_t ns(int64_t ticks) const { return TimelineClock::to_steady_ns(ticks, first, last); }
};

void append_event(std::string& out, const TimelineEntry& entry, const TickScale& scale, int pid,
                  int tid, const std::string& group) {
  int64_t start = scale.ns(entry.start_ticks);
  int64_t end = entry.outcome == OpOutcome::kRunning ? start : scale.ns(entry.end_ticks);
  out += "{\"name\":";
  append_escaped(out, entry.op);
  out += ",\"cat\":\"";
  out += entry.seq >= 0 ? "collective" : "p2p";
  out += "\",\"ph\":\"X\",\"ts\":" + micros(start) + ",\"dur\":" + micros(end - start) +
         ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
         ",\"args\":{\"seq\":" + std::to_string(entry.seq) + ",\"op\":";
  append_escaped(out, entry.op);
  out += ",\"bytes\":" + std::to_string(entry.bytes) + ",\"dtype\":\"" +
         std::string(name_of(entry.dtype)) + "\",\"algorithm\":";
  append_escaped(out, entry.algorithm ? entry.algorithm : "");
  out += entry.seq >= 0 ? ",\"root\":" : ",\"peer\":";
  out += std::to_string(entry.peer) + ",\"group\":";
  append_escaped(out, group);
  out += ",\"state\":\"" + std::string(name_of(entry.outcome)) + "\"}}";
}

}  // namespace

std::shared_ptr<RankTrace> RankTrace::for_world(const void* world, int world_rank, int world_size) {
  std::string dir = util::setting_string("WEFT_TRACE");
  if (dir.empty()) return nullptr;
  std::error_code ignored;  // write() says when the directory cannot be written
  std::filesystem::create_directories(dir, ignored);
  static std::once_flag hook;
  std::call_once(hook, [] { std::atexit(write_live_traces); });
  util::MutexLock lock(registry().mutex);
  std::weak_ptr<RankTrace>& slot = registry().traces[world];
  if (auto existing = slot.lock()) return existing;
  auto made = std::make_shared<RankTrace>(std::move(dir), world_rank, world_size);
  slot = made;
  return made;
}

RankTrace::RankTrace(std::string dir, int world_rank, int world_size)
    : dir_(std::move(dir)),
      world_rank_(world_rank),
      world_size_(world_size),
      clock_(TimelineClock::best()),
      started_(clock_.pair()),
      owner_pid_(::getpid()),
      spiller_(std::make_unique<std::thread>([this] { spill_until_stopped(); })) {}

RankTrace::~RankTrace() {
  stop_spilling();
  write();
  util::MutexLock lock(registry().mutex);
  for (auto it = registry().traces.begin(); it != registry().traces.end(); ++it) {
    if (it->second.expired()) {
      registry().traces.erase(it);
      break;
    }
  }
}

void RankTrace::spill_until_stopped() {
  uint32_t seen = 0;
  while (!stopping_.load(std::memory_order_acquire)) {
    segments_sealed_.wait(seen, std::memory_order_acquire);
    seen = segments_sealed_.load(std::memory_order_acquire);
    util::MutexLock lock(mutex_);
    for (const auto& [group, lane] : lanes_) {
      lane->collectives.spill_sealed_segments();
      lane->point_to_point.spill_sealed_segments();
    }
  }
}

void RankTrace::stop_spilling() {
  util::MutexLock lock(spiller_mutex_);
  if (!spiller_) return;
  if (::getpid() != owner_pid_) {
    (void)spiller_.release();  // the thread is the parent's: nothing here to join
    return;
  }
  stopping_.store(true, std::memory_order_release);
  segments_sealed_.fetch_add(1, std::memory_order_release);
  segments_sealed_.notify_one();
  spiller_->join();
  spiller_.reset();
}

std::shared_ptr<GroupTimelines> RankTrace::add_group(const std::string& group) {
  auto lane = std::make_shared<GroupTimelines>(dir_, &segments_sealed_);
  util::MutexLock lock(mutex_);
  lanes_.emplace_back(group, lane);
  return lane;
}

void RankTrace::write_json(const std::function<void(const std::string&)>& emit) const {
  std::string out = "{\"otherData\":{\"weft_rank\":" + std::to_string(world_rank_) +
                    ",\"weft_world_size\":" + std::to_string(world_size_) +
                    ",\"clock_offset_us\":" + micros(clock_offset_ns_) + "},\n\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(world_rank_) +
         ",\"args\":{\"name\":\"rank " + std::to_string(world_rank_) + "\"}}";
  // Emitted in pieces: a long job's timeline is many times the size of its ring.
  auto flush_if_large = [&] {
    if (out.size() < (1u << 20)) return;
    emit(out);
    out.clear();
  };
  TickScale scale{started_, clock_.pair()};
  util::MutexLock lock(mutex_);
  int tid = 0;
  for (const auto& named_lane : lanes_) {
    // Not a structured binding: the lambdas below use the name, which clang before 16 does not
    // let a lambda capture.
    const std::string& group = named_lane.first;
    const std::shared_ptr<GroupTimelines>& lane = named_lane.second;
    ++tid;
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(world_rank_) +
           ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":";
    append_escaped(out, "group " + group);
    out += "}}";
    for (const OpTimeline* timeline : {&lane->collectives, &lane->point_to_point}) {
      timeline->for_each([&](const TimelineEntry& entry) {
        out += ",\n";
        append_event(out, entry, scale, world_rank_, tid, group);
        flush_if_large();
      });
      if (timeline->dropped() > 0) {
        util::log_warn(util::Subsys::kColl, [&] {
          return "WEFT_TRACE: group '" + group + "' recorded more ops than a trace keeps; " +
                 std::to_string(timeline->dropped()) + " left out";
        });
      }
    }
  }
  out += "\n]}\n";
  emit(out);
}

void RankTrace::write() const {
  if (::getpid() != owner_pid_) return;
  std::string path = dir_ + "/rank" + std::to_string(world_rank_) + ".json";
  std::string temporary = path + ".tmp";
  FILE* file = std::fopen(temporary.c_str(), "w");
  bool written = file != nullptr;
  if (file != nullptr) {
    write_json([&](const std::string& text) {
      written = written && std::fwrite(text.data(), 1, text.size(), file) == text.size();
    });
    written = std::fclose(file) == 0 && written;
  }
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    util::log_warn(util::Subsys::kColl, [&] { return "WEFT_TRACE: cannot write " + path; });
  }
}

}  // namespace weft::core

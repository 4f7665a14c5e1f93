#include "core/trace_writer.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "util/log.h"
#include "util/settings.h"

namespace weft::core {

namespace {

// The live traces by World, and the exit hook that writes those still alive at exit. Leaked on
// purpose: the exit hook runs while statics are being destroyed.
struct Registry {
  std::mutex mutex;
  std::map<const void*, std::weak_ptr<RankTrace>> traces;
};

Registry& registry() {
  static Registry* made = new Registry;
  return *made;
}

void write_live_traces() {
  std::vector<std::shared_ptr<RankTrace>> alive;
  {
    std::lock_guard lock(registry().mutex);
    for (auto& [world, trace] : registry().traces) {
      if (auto held = trace.lock()) alive.push_back(std::move(held));
    }
  }
  for (const auto& trace : alive) trace->write();
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

void append_event(std::string& out, const OpRecord& record, int pid, int tid,
                  const std::string& group) {
  const OpStart& what = record.what;
  int64_t end = record.outcome == OpOutcome::kRunning ? record.start_ns : record.end_ns;
  out += "{\"name\":";
  append_escaped(out, what.op);
  out += ",\"cat\":\"";
  out += what.seq >= 0 ? "collective" : "p2p";
  out += "\",\"ph\":\"X\",\"ts\":" + micros(record.start_ns) +
         ",\"dur\":" + micros(end - record.start_ns) + ",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"seq\":" + std::to_string(what.seq) +
         ",\"op\":";
  append_escaped(out, what.op);
  out += ",\"bytes\":" + std::to_string(what.bytes) + ",\"dtype\":\"" +
         std::string(name_of(what.dtype)) + "\",\"algorithm\":";
  append_escaped(out, what.algorithm ? what.algorithm : "");
  out += what.seq >= 0 ? ",\"root\":" : ",\"peer\":";
  out += std::to_string(what.peer) + ",\"group\":";
  append_escaped(out, group);
  out += ",\"state\":\"" + std::string(name_of(record.outcome)) + "\"}}";
}

}  // namespace

std::shared_ptr<RankTrace> RankTrace::for_world(const void* world, int world_rank, int world_size) {
  std::string dir = util::setting_string("WEFT_TRACE");
  if (dir.empty()) return nullptr;
  std::error_code ignored;  // write() says when the directory cannot be written
  std::filesystem::create_directories(dir, ignored);
  static std::once_flag hook;
  std::call_once(hook, [] { std::atexit(write_live_traces); });
  std::lock_guard lock(registry().mutex);
  std::weak_ptr<RankTrace>& slot = registry().traces[world];
  if (auto existing = slot.lock()) return existing;
  auto made = std::make_shared<RankTrace>(std::move(dir), world_rank, world_size);
  slot = made;
  return made;
}

RankTrace::RankTrace(std::string dir, int world_rank, int world_size)
    : dir_(std::move(dir)), world_rank_(world_rank), world_size_(world_size) {}

RankTrace::~RankTrace() {
  write();
  std::lock_guard lock(registry().mutex);
  for (auto it = registry().traces.begin(); it != registry().traces.end(); ++it) {
    if (it->second.expired()) {
      registry().traces.erase(it);
      break;
    }
  }
}

std::shared_ptr<OpTimeline> RankTrace::add_group(const std::string& group) {
  auto lane = std::make_shared<OpTimeline>();
  std::lock_guard lock(mutex_);
  lanes_.emplace_back(group, lane);
  return lane;
}

std::string RankTrace::to_json() const {
  std::string out = "{\"otherData\":{\"weft_rank\":" + std::to_string(world_rank_) +
                    ",\"weft_world_size\":" + std::to_string(world_size_) +
                    ",\"clock_offset_us\":" + micros(clock_offset_ns_) + "},\n\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(world_rank_) +
         ",\"args\":{\"name\":\"rank " + std::to_string(world_rank_) + "\"}}";
  std::lock_guard lock(mutex_);
  int tid = 0;
  for (const auto& [group, lane] : lanes_) {
    ++tid;
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(world_rank_) +
           ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":";
    append_escaped(out, "group " + group);
    out += "}}";
    lane->for_each([&](const OpRecord& record) {
      out += ",\n";
      append_event(out, record, world_rank_, tid, group);
    });
    if (lane->dropped() > 0) {
      util::log_warn(util::Subsys::kColl, [&] {
        return "WEFT_TRACE: group '" + group + "' recorded more ops than a trace keeps; " +
               std::to_string(lane->dropped()) + " left out";
      });
    }
  }
  out += "\n]}\n";
  return out;
}

void RankTrace::write() const {
  std::string path = dir_ + "/rank" + std::to_string(world_rank_) + ".json";
  std::string temporary = path + ".tmp";
  std::string text = to_json();
  FILE* file = std::fopen(temporary.c_str(), "w");
  bool written = file != nullptr && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (file != nullptr) written = std::fclose(file) == 0 && written;
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    util::log_warn(util::Subsys::kColl, [&] { return "WEFT_TRACE: cannot write " + path; });
  }
}

}  // namespace weft::core

#include "transport/tcp/congestion_control.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/log.h"
#include "util/socket.h"
#include "weft/error.h"

namespace weft::transport {
namespace {

constexpr std::string_view kSetting = "WEFT_SOCKET_CONGESTION";
// What replaces a pacing default: built into every kernel, and every process may choose it.
constexpr const char* kInsteadOfPacing = "reno";

bool paces_every_stream(std::string_view name) { return name.starts_with("bbr"); }

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

[[noreturn]] void refused(std::string_view setting, int error) {
  std::string allowed = first_line_of("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  std::string available = first_line_of("/proc/sys/net/ipv4/tcp_available_congestion_control");
  throw Error(ErrorCode::kInvalidArgument,
              std::string(kSetting) + "=" + std::string(setting) +
                  ": the kernel refuses it for this process (" + std::strerror(error) +
                  "); allowed: " + (allowed.empty() ? "?" : allowed) +
                  "; loaded: " + (available.empty() ? "?" : available) +
                  " (others need root, or the module loaded)");
}

util::Fd probe_socket() {
  util::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) fd = util::Fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd;
}

int set_on(int fd, const std::string& name) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                   static_cast<socklen_t>(name.size())) == 0) {
    return 0;
  }
  return errno;
}

}  // namespace

std::string choose_congestion_control(std::string_view setting, std::string_view system_default,
                                      const std::function<int(const std::string&)>& refusal) {
  if (setting == "system") return {};
  if (setting.empty() || setting == "auto") {
    if (!paces_every_stream(system_default) || refusal(kInsteadOfPacing) != 0) return {};
    return kInsteadOfPacing;
  }
  std::string name(setting);
  if (int error = refusal(name); error != 0) refused(setting, error);
  return name == system_default ? std::string() : name;
}

std::string resolve_congestion_control(std::string_view setting) {
  util::Fd probe = probe_socket();
  if (!probe.valid()) return {};  // no TCP here: nothing will use the answer
  const std::string system_default = congestion_control_of(probe.get());
  std::string chosen = choose_congestion_control(
      setting, system_default, [&](const std::string& name) { return set_on(probe.get(), name); });
  if (!chosen.empty()) {
    util::log_info(util::Subsys::kTransport, [&] {
      return "transport: connections between ranks use TCP congestion control " + chosen +
             " instead of the system's " + system_default + " (" + std::string(kSetting) +
             "=system keeps it)";
    });
  }
  return chosen;
}

void use_congestion_control(int fd, const std::string& name) {
  if (name.empty()) return;
  if (int error = set_on(fd, name); error != 0) {
    util::log_warn(util::Subsys::kTransport, [&] {
      return "transport: cannot set TCP congestion control " + name +
             " on a connection: " + std::strerror(error);
    });
  }
}

std::string congestion_control_of(int fd) {
  char name[64] = {};
  socklen_t length = sizeof name - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length) != 0) return {};
  return std::string(name, strnlen(name, length));
}

}  // namespace weft::transport

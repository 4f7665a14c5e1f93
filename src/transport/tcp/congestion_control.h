// Which TCP congestion control weft's data connections use (WEFT_SOCKET_CONGESTION).
//
// By default a connection keeps the kernel's choice, unless that choice paces every stream at its
// own bandwidth estimate (BBR): then it uses Reno. Between the ranks of one job traffic comes in
// bursts after compute, and BBR sends a burst no faster than the rate it measured last, which on
// a busy host is the pace at which a receiver's core drained the previous one, not the link's;
// without the fq qdisc it also paces with a timer per burst, an interrupt each. Reno sends a burst
// as fast as its window allows, and the kernel lets every process choose it (cubic needs root
// unless the administrator allows it). docs/transport.md, "Congestion control".
//
// Thread-safety: functions of values, and of the kernel's state.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace weft::transport {

// The congestion control to set on every data connection, or empty to leave the kernel's:
// - `setting` "auto" or empty: reno in place of a `system_default` that paces (bbr, bbr2...);
//   the system's otherwise;
// - "system": the system's;
// - a name: that one.
// `refusal(name)` is the errno with which the kernel refuses `name` for this process (0: it
// accepts it). A name the setting gives and the kernel refuses throws weft::Error
// (kInvalidArgument) naming the setting, the reason and the names the kernel allows.
std::string choose_congestion_control(std::string_view setting, std::string_view system_default,
                                      const std::function<int(const std::string&)>& refusal);

// choose_congestion_control against this kernel: its default for a new TCP socket, and what it
// lets this process set. Logs the choice at INFO when it replaces the default.
std::string resolve_congestion_control(std::string_view setting);

// Sets `name` (choose_congestion_control's answer) on socket `fd`; nothing when empty. Call it
// on a listener (what it accepts starts with its listener's) or before connect: a connection's
// congestion control starts when it is established, and a BBR started then leaves the socket
// paced after a change. The kernel accepted `name` on a probe socket already, so a refusal
// here is only logged.
void use_congestion_control(int fd, const std::string& name);

// The congestion control of socket `fd`, empty when it cannot be read.
std::string congestion_control_of(int fd);

}  // namespace weft::transport

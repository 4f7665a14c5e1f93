# vcpu_mode.sh — sourced by the by-mode scripts: the host's vCPU mode (docs/PERFORMANCE.md, "Two
# modes"), read from one cache line's round trip between CPU 0 and 1 (bench/line_round_trip.c).
#   vcpu_mode_build DIR   compiles the probe into DIR (returns non-zero when it cannot)
#   vcpu_mode             prints "fast" (round trip below 250 ns) or "slow"
vcpu_mode_build() {
  vcpu_mode_probe="$1/line_round_trip"
  cc -O2 -pthread -o "$vcpu_mode_probe" "$(dirname "${BASH_SOURCE[0]}")/line_round_trip.c"
}
vcpu_mode() { (( $("$vcpu_mode_probe" 20000) < 250 )) && echo fast || echo slow; }

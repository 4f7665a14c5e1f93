# two_hosts.sh — sourced by the benchmarks that need two simulated hosts: network namespaces
# joined by a veth pair, each with its end as eth0 (SUBNET.1 and SUBNET.2, /24, addresses that
# exist only inside them) and lo up. Needs root.
#
#   source "$repo/bench/two_hosts.sh"
#   two_hosts_up ID SUBNET     # e.g. two_hosts_up "wsc$$" 10.79.0; exits the script on failure
#   "${two_hosts[0]}" "${two_hosts[1]}"   # the namespaces' names, for ip netns exec
#   two_hosts_down             # kills what runs in them and removes them (call it in a trap)

two_hosts=()

two_hosts_up() {
  local id=$1 subnet=$2 k
  two_hosts=("${id}a" "${id}b")
  ip netns add "${two_hosts[0]}" && ip netns add "${two_hosts[1]}" &&
    ip link add "${id}0" type veth peer name "${id}1" &&
    ip link set "${id}0" netns "${two_hosts[0]}" && ip link set "${id}1" netns "${two_hosts[1]}" ||
    exit 1
  for k in 0 1; do
    ip -n "${two_hosts[$k]}" link set "${id}$k" name eth0 &&
      ip -n "${two_hosts[$k]}" addr add "$subnet.$((k + 1))/24" dev eth0 &&
      ip -n "${two_hosts[$k]}" link set eth0 up && ip -n "${two_hosts[$k]}" link set lo up || exit 1
  done
}

two_hosts_down() {
  local ns pid
  for ns in "${two_hosts[@]}"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns delete "$ns" 2>/dev/null
  done
}

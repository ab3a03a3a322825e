# Sourced by tp_netns.sh and link_emulator_check.sh: joins two network namespaces with
# link_emulator (two TUN devices and a user-space copy with a delay and a rate).
# start_emulated_link EMULATOR DIR NS_A NS_B TAG ADDR_A ADDR_B DELAY_US RATE_MBIT MTU [ARGS...]
# creates the devices a$TAG and b$TAG, moves them into NS_A and NS_B with ADDR_A and ADDR_B (/24),
# and sets emulator_pid; the caller kills it when done. Returns non-zero, with the emulator's
# error on stderr, where it cannot start (no /dev/net/tun, say).
start_emulated_link() {
  local emulator=$1 dir=$2 ns_a=$3 ns_b=$4 tag=$5 addr_a=$6 addr_b=$7 delay_us=$8 rate=$9
  local mtu=${10}
  shift 10
  "$emulator" --tun-a "a$tag" --tun-b "b$tag" --delay-us "$delay_us" --rate-mbit "$rate" "$@" \
    >"$dir/emulator.out" 2>"$dir/emulator.err" &
  emulator_pid=$!
  for _ in $(seq 100); do
    grep -q ready "$dir/emulator.out" 2>/dev/null && break
    if ! kill -0 "$emulator_pid" 2>/dev/null; then
      emulator_pid=
      cat "$dir/emulator.err" >&2
      return 1
    fi
    sleep 0.05
  done
  ip link set "a$tag" netns "$ns_a" && ip link set "b$tag" netns "$ns_b" &&
    ip -n "$ns_a" addr add "$addr_a/24" dev "a$tag" && ip -n "$ns_b" addr add "$addr_b/24" dev "b$tag" &&
    ip -n "$ns_a" link set "a$tag" mtu "$mtu" up && ip -n "$ns_b" link set "b$tag" mtu "$mtu" up
}

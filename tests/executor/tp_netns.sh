#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair, one rank in each,
# MPI over TCP between them (Open MPI's remote launch goes through `ip netns exec` instead of
# ssh). Runs `pagedllm ARGS... --tensor-parallel-size 2` that way and prints its stdout.
# Exits 77 when this machine cannot create a namespace (no CAP_SYS_ADMIN): the caller skips.
# usage: tp_netns.sh SCRATCH_DIR BINARY ARGS...
# Env, to shape the link (scripts/bench-tp-link.sh): LINK_RATE (a tc rate, e.g. 1gbit: a token
# bucket on both ends) and LINK_DELAY (e.g. 0.5ms each way, with tc netem). Where the kernel has
# no sch_netem, LINK_EMULATOR (the path of tests' link_emulator) carries the packets instead of
# the veth pair: two TUN devices and a user-space copy with the same delay and rate; without it
# the script stops with exit 78 and says why (77 where the emulator cannot start: no TUN).
set -u
source "$(dirname "$0")/emulated_link.sh"
dir=$1 binary=$2
shift 2
mkdir -p "$dir"
tag=$$
ns_a=pagedllm-a-$tag ns_b=pagedllm-b-$tag
cleanup() {
  [ -n "${emulator_pid:-}" ] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid"
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT
# Two namespaces with their loopback up; the link between them comes below. (`set -e` does not act in
# a condition, hence the chain.)
make_hosts() {
  ip netns add "$ns_a" && ip netns add "$ns_b" &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up
}
if ! (make_hosts) 2>"$dir/netns.err"; then
  echo "cannot create two network namespaces: $(cat "$dir/netns.err")" >&2
  exit 77
fi
have_netem() {
  tc -n "$ns_a" qdisc add dev lo root netem delay 1ms 2>/dev/null &&
    tc -n "$ns_a" qdisc del dev lo root
}
# tc's rates (10gbit, 500mbit, 64kbit) in Mbit/s.
rate_mbit() {
  local n=${1%%[a-zA-Z]*} unit=${1##*[0-9.]}
  case $unit in
    gbit) awk "BEGIN { print $n * 1000 }" ;; mbit) echo "$n" ;; kbit) awk "BEGIN { print $n / 1000 }" ;;
    *) echo "unknown rate unit in '$1' (gbit, mbit, kbit)" >&2; return 1 ;;
  esac
}
# The link in user space (link_emulator, emulated_link.sh), with Ethernet's 1500-byte MTU
# (LINK_MTU to change it), as the veth pair has.
emulate_link() {
  local delay_us=0 rate=0
  if [ -n "${LINK_DELAY:-}" ]; then
    case $LINK_DELAY in
      *ms) delay_us=$(awk "BEGIN { print ${LINK_DELAY%ms} * 1000 }") ;;
      *us) delay_us=${LINK_DELAY%us} ;;
      *) echo "LINK_DELAY '$LINK_DELAY': give it in ms or us" >&2; return 1 ;;
    esac
  fi
  if [ -n "${LINK_RATE:-}" ]; then rate=$(rate_mbit "$LINK_RATE") || return 1; fi
  # shellcheck disable=SC2086 # LINK_EMULATOR_ARGS: flags, split on purpose
  start_emulated_link "$LINK_EMULATOR" "$dir" "$ns_a" "$ns_b" "t$tag" 10.77.0.1 10.77.0.2 \
    "$delay_us" "$rate" "${LINK_MTU:-1500}" ${LINK_EMULATOR_ARGS:-}
}
emulator_pid=
use_emulator=
if [ -n "${LINK_DELAY:-}" ] && ! have_netem; then
  if [ -z "${LINK_EMULATOR:-}" ] || [ ! -x "${LINK_EMULATOR:-}" ]; then
    echo "cannot add link latency: this kernel has no sch_netem and LINK_EMULATOR names no" \
      "link_emulator" >&2
    exit 78
  fi
  use_emulator=1
  echo "no sch_netem: link_emulator carries the link (delay ${LINK_DELAY}, rate ${LINK_RATE:-unlimited})" >&2
fi
make_veth() {
  ip link add "va$tag" type veth peer name "vb$tag" &&
    ip link set "va$tag" netns "$ns_a" && ip link set "vb$tag" netns "$ns_b" &&
    ip -n "$ns_a" addr add 10.77.0.1/24 dev "va$tag" &&
    ip -n "$ns_b" addr add 10.77.0.2/24 dev "vb$tag" &&
    ip -n "$ns_a" link set "va$tag" up && ip -n "$ns_b" link set "vb$tag" up
}
if [ -n "$use_emulator" ]; then
  if ! emulate_link 2>"$dir/link.err"; then
    # No TUN device here (/dev/net/tun), say: the machine cannot, as without namespaces.
    echo "cannot start link_emulator: $(cat "$dir/link.err")" >&2
    exit 77
  fi
elif ! (make_veth) 2>"$dir/link.err"; then
  echo "cannot join the namespaces with a veth pair: $(cat "$dir/link.err")" >&2
  exit 77
fi
# Both ends of the veth, so that each direction is shaped.
shape_link() {
  local netem=() tbf=()
  [ -n "${LINK_DELAY:-}" ] && netem=(netem delay "$LINK_DELAY")
  [ -n "${LINK_RATE:-}" ] && tbf=(tbf rate "$LINK_RATE" burst 256kb latency 100ms)
  for end in "$ns_a va$tag" "$ns_b vb$tag"; do
    set -- $end
    if [ ${#netem[@]} -gt 0 ]; then
      tc -n "$1" qdisc add dev "$2" root handle 1: "${netem[@]}" || return 1
      [ ${#tbf[@]} -gt 0 ] && { tc -n "$1" qdisc add dev "$2" parent 1: handle 2: "${tbf[@]}" || return 1; }
    elif [ ${#tbf[@]} -gt 0 ]; then
      tc -n "$1" qdisc add dev "$2" root "${tbf[@]}" || return 1
    fi
  done
}
if [ -z "$use_emulator" ] && ! shape_link 2>"$dir/tc.err"; then
  echo "cannot shape the link (LINK_RATE=${LINK_RATE:-} LINK_DELAY=${LINK_DELAY:-}): $(cat "$dir/tc.err")" >&2
  exit 78
fi
# Each "host" has a core of its own, as two machines would (where this machine has two), so that
# the kernel never puts both ranks on one core to meet only at its 4 ms tick.
core_a=0 core_b=$(($(nproc) > 1 ? 1 : 0))
# mpirun calls its remote-launch agent as `agent HOST COMMAND...`, as it would call ssh.
cat >"$dir/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
ns=$ns_a core=$core_a
[ "\$host" = 10.77.0.2 ] && ns=$ns_b core=$core_b
echo "launched on \$host in \$ns" >>"$dir/launches"
exec ip netns exec "\$ns" taskset -c "\$core" sh -c "\$*"
AGENT
chmod +x "$dir/agent.sh"
rm -f "$dir/launches"
set +e
# --bind-to none: each "host" would bind its rank to its core 0, which is the same core here; the
# cores come from taskset instead.
ip netns exec "$ns_a" taskset -c "$core_a" mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
  --host 10.77.0.1:1,10.77.0.2:1 --mca plm_rsh_agent "$dir/agent.sh" \
  --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
  --mca oob_tcp_if_include 10.77.0.0/24 \
  "$binary" "$@" --tensor-parallel-size 2 </dev/null
code=$?
cat "$dir/launches" >&2
exit $code

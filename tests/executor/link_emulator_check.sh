#!/usr/bin/env bash
# link_emulator between two network namespaces, measured from outside it: the round trip of a
# UDP datagram (two one-way delays) and the time of a TCP transfer (its rate). Prints
# "rtt_ms=X" for each of 5 datagrams and "transfer_s=Y" for 2 MB.
# Exits 77 when this machine cannot create a namespace or a TUN device (the caller skips).
# usage: link_emulator_check.sh EMULATOR SCRATCH_DIR DELAY_US RATE_MBIT
set -u
emulator=$1 dir=$2 delay_us=$3 rate=$4
mkdir -p "$dir"
tag=$$
ns_a=pagedllm-la-$tag ns_b=pagedllm-lb-$tag
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT
if ! { ip netns add "$ns_a" && ip netns add "$ns_b"; } 2>"$dir/netns.err"; then
  echo "cannot create network namespaces: $(cat "$dir/netns.err")" >&2
  exit 77
fi
"$emulator" --tun-a "la$tag" --tun-b "lb$tag" --delay-us "$delay_us" --rate-mbit "$rate" \
  >"$dir/emulator.out" 2>"$dir/emulator.err" &
pid=$!
for _ in $(seq 100); do
  grep -q ready "$dir/emulator.out" 2>/dev/null && break
  if ! kill -0 "$pid" 2>/dev/null; then
    pid=
    echo "link_emulator did not start: $(cat "$dir/emulator.err")" >&2
    exit 77
  fi
  sleep 0.05
done
ip link set "la$tag" netns "$ns_a" && ip link set "lb$tag" netns "$ns_b" &&
  ip -n "$ns_a" addr add 10.78.0.1/24 dev "la$tag" && ip -n "$ns_b" addr add 10.78.0.2/24 dev "lb$tag" &&
  ip -n "$ns_a" link set "la$tag" mtu 1500 up && ip -n "$ns_b" link set "lb$tag" mtu 1500 up || exit 1
# The far end: echoes 5 datagrams, then takes one TCP stream to its end and answers one byte.
ip netns exec "$ns_b" /usr/bin/python3 -c '
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("10.78.0.2", 9000))
t = socket.socket(); t.bind(("10.78.0.2", 9001)); t.listen(1)
for _ in range(5):
    data, peer = u.recvfrom(64); u.sendto(data, peer)
c, _ = t.accept()
while c.recv(1 << 16): pass
c.sendall(b"k")
' &
server=$!
sleep 0.3
ip netns exec "$ns_a" /usr/bin/python3 -c '
import socket, time
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5)
for _ in range(5):
    start = time.monotonic(); u.sendto(b"x", ("10.78.0.2", 9000)); u.recvfrom(64)
    print("rtt_ms=%.3f" % ((time.monotonic() - start) * 1e3))
t = socket.create_connection(("10.78.0.2", 9001), timeout=30)
start = time.monotonic(); t.sendall(b"x" * 2000000); t.shutdown(socket.SHUT_WR); t.recv(1)
print("transfer_s=%.4f" % (time.monotonic() - start))
'
code=$?
wait "$server"
exit $code

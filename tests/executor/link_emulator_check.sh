#!/usr/bin/env bash
# link_emulator between two network namespaces, measured from outside it: the round trip of a
# UDP datagram (two one-way delays) and the time of a TCP transfer (its rate). Prints
# "rtt_ms=X" for each of 5 datagrams and "transfer_s=Y" for 2 MB.
# Exits 77 when this machine cannot create a namespace or a TUN device (the caller skips).
# usage: link_emulator_check.sh EMULATOR SCRATCH_DIR DELAY_US RATE_MBIT
set -u
source "$(dirname "$0")/emulated_link.sh"
emulator=$1 dir=$2 delay_us=$3 rate=$4
mkdir -p "$dir"
tag=$$
ns_a=pagedllm-la-$tag ns_b=pagedllm-lb-$tag
emulator_pid=
cleanup() {
  [ -n "$emulator_pid" ] && kill "$emulator_pid" 2>/dev/null && wait "$emulator_pid"
  ip netns del "$ns_a" 2>/dev/null
  ip netns del "$ns_b" 2>/dev/null
}
trap cleanup EXIT
if ! { ip netns add "$ns_a" && ip netns add "$ns_b"; } 2>"$dir/netns.err"; then
  echo "cannot create network namespaces: $(cat "$dir/netns.err")" >&2
  exit 77
fi
if ! start_emulated_link "$emulator" "$dir" "$ns_a" "$ns_b" "l$tag" 10.78.0.1 10.78.0.2 \
  "$delay_us" "$rate" 1500 2>"$dir/link.err"; then
  [ -z "$emulator_pid" ] && { echo "link_emulator did not start: $(cat "$dir/link.err")" >&2; exit 77; }
  cat "$dir/link.err" >&2
  exit 1
fi
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

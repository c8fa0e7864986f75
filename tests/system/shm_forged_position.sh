#!/usr/bin/env bash
# Something with write access to the ring (the publisher's own user gone
# wrong, a bit flip) holds the published write position at 2^40 while
# subscribers start. They used to start 10^12 slots ahead and read nothing
# forever; now they start where the slots prove the writer is, count the
# implausible position (shm.implausible_position), and end with books
# identical to the publisher's.
source "$(dirname "$0")/lib.sh"

# The publisher publishes nothing until both subscribers are there, so they
# attach and position themselves while the word is forged.
start_bg pub publish --name "$NAME" --rate 5k --duration 4s --instrument-count 50 --idle block \
  --wait-subscribers 2 --result "$WORK/pub.toml"
wait_ring
RING=/dev/shm/mdcast-$NAME.ring
[ -e "$RING" ] || RING=/dev/hugepages/mdcast-$NAME.ring
# The forger stores 2^40 over the published word (offset 1024) until told to
# stop; once data flows the publisher stores the truth at each datagram.
python3 - "$RING" "$WORK/stop-forging" "$WORK/forging" >"$WORK/forger.log" 2>&1 <<'PY' &
import mmap, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 4096)
m[1024:1032] = struct.pack("<Q", 1 << 40)
open(sys.argv[3], "w").close()
end = time.time() + 30
n = 0
while time.time() < end and not os.path.exists(sys.argv[2]):
    for _ in range(1000):
        m[1024:1032] = struct.pack("<Q", 1 << 40)
    n += 1000
print("forged", n, "times")
PY
forger=$!
PIDS+=($forger)
i=0
until [ -e "$WORK/forging" ]; do
  sleep 0.05; i=$((i + 1))
  [ $i -lt 400 ] || fail "the forger never started: $(cat "$WORK/forger.log")"
done
for i in 1 2; do start_bg "sub$i" subscribe --name "$NAME" --idle block --result "$WORK/sub$i.toml"; done
wait_published "$PID_pub" 2000
touch "$WORK/stop-forging"
wait "$forger" || fail "the forger failed: $(cat "$WORK/forger.log")"
note "$(cat "$WORK/forger.log")"
for i in 1 2; do eval wait_pid \$PID_sub$i 60 || fail "subscriber $i exited non-zero"; done
wait_pid "$PID_pub" 30 || fail "publisher exited non-zero"
"$MDCAST" verify "$WORK/pub.toml" "$WORK/sub1.toml" "$WORK/sub2.toml"
published=$(toml_get "$WORK/pub.toml" messages)
for i in 1 2; do
  got=$(toml_get "$WORK/sub$i.toml" messages)
  [ "$got" = "$published" ] || fail "subscriber $i delivered $got of $published"
  [ "$(toml_get "$WORK/sub$i.toml" shm.implausible_position)" -ge 1 ] ||
    fail "subscriber $i never saw the forged position (it positioned itself while it was there)"
done
note "both subscribers counted the forged position, delivered all $published messages; books identical"

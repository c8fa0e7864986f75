#!/usr/bin/env bash
# Clear errors, non-zero exit: unknown config key, bad value, missing ring,
# a ring of an incompatible layout version or writable by anyone, a ring
# over the size cap, an unknown publisher user or group.
source "$(dirname "$0")/lib.sh"

expect_error() {  # expect_error PATTERN ARGS...
  local pattern=$1; shift
  if "$MDCAST" "$@" >"$WORK/out.log" 2>&1; then fail "'mdcast $*' succeeded"; fi
  grep -qE -- "$pattern" "$WORK/out.log" || { cat "$WORK/out.log"; fail "'mdcast $*' did not say /$pattern/"; }
  note "mdcast $*: $(head -1 "$WORK/out.log")"
}

printf '[publisher]\nrate = 1000\nrat = 5\n' >"$WORK/typo.toml"
expect_error "typo.toml:3: unknown config key 'publisher.rat'" --config "$WORK/typo.toml" publish
printf '[publisher]\nduration = "ten seconds"\n' >"$WORK/bad.toml"
expect_error "bad.toml:2: publisher.duration: 'ten seconds' is not a duration" --config "$WORK/bad.toml" publish
printf '[nosuch]\nx = 1\n' >"$WORK/section.toml"
expect_error "unknown config key 'nosuch.x'" --config "$WORK/section.toml" publish
expect_error "--rate: publisher.rate: '12x' is not a rate" publish --name "$NAME" --rate 12x
expect_error "is not a fraction|must be a fraction" demo --loss 1.5
"$MDCAST" --help-config >"$WORK/help.txt" 2>&1 || { cat "$WORK/help.txt"; fail "mdcast --help-config (as the README says) failed"; }
grep -q "udp.rail_b" "$WORK/help.txt" || fail "mdcast --help-config does not list udp.rail_b"
expect_error "a subcommand is required" --config "$WORK/help.txt"
# A settings file before or after the subcommand, and through the demo to its children.
printf '[publisher]\nrate = "2k"\nduration = "1s"\n[demo]\nsubscribers = 1\nprogress = false\n' >"$WORK/demo.toml"
"$MDCAST" --config "$WORK/demo.toml" demo --name "$NAME-cfg" >"$WORK/demo-cfg.log" 2>&1 \
  || { cat "$WORK/demo-cfg.log"; fail "mdcast --config f.toml demo failed"; }
grep -q "2000 msg/s" "$WORK/demo-cfg.log" || fail "the demo did not take the file's rate"
"$MDCAST" publish --config "$WORK/demo.toml" --name "$NAME-cfg2" --duration 200ms >"$WORK/pub-cfg.log" 2>&1 \
  || { cat "$WORK/pub-cfg.log"; fail "mdcast publish --config f.toml failed"; }
# verify takes a publisher's result file, then subscribers': not one for the other.
"$MDCAST" publish --name "$NAME-v" --duration 200ms --rate 1k --result "$WORK/v-pub.toml" >"$WORK/v-pub.log" 2>&1 \
  || { cat "$WORK/v-pub.log"; fail "publisher for the verify check failed"; }
expect_error "v-pub.toml is a publisher's result file, not a subscriber's" verify "$WORK/v-pub.toml" "$WORK/v-pub.toml"
# Channels: what cannot be split or placed is refused before anything is created.
expect_error "feed.channels: '17' must be a whole number in \[1, 16\]" publish --name "$NAME" --channels 17
expect_error "3 publishing threads for 2 channels" publish --name "$NAME" --channels 2 --threads 3
expect_error "one per publisher.cpus entry" publish --name "$NAME" --channels 2 --cpu 0,0,0
expect_error "names channel index 2, but the feed has 2 channels" publish --name "$NAME" --channels 2 --channel-map 0-5:2
expect_error "overlap" publish --name "$NAME" --channels 2 --channel-map 0-5:0,5-9:1
expect_error "goes past channel id 65535" publish --name "$NAME" --channel 65535 --channels 2
expect_error "channel 1: shm ring .* more than shm.max_bytes" publish --name "$NAME" --channels 2 --threads 2 --set shm.max_bytes=1MiB
expect_error "record takes one channel" record --name "$NAME" --channels 2 --out "$WORK/rec"
# A subscriber that heard nothing prints no latency of zero messages.
"$MDCAST" subscribe --medium udp --udp-group "239.77.15.$((1 + $$ % 250)):$((20000 + $$ % 20000))" --wait 1s \
  >"$WORK/silent.log" 2>&1 && fail "a subscriber that heard nothing exited 0"
grep -q "nothing from a publisher in" "$WORK/silent.log" || { cat "$WORK/silent.log"; fail "no word of the silence"; }
! grep -q "latency p50" "$WORK/silent.log" || { cat "$WORK/silent.log"; fail "latency of zero messages printed"; }
# A feed heard whose control plane never answers (here a dead feed.control;
# also every announcement unsigned where udp.announce_public_key is set): a
# setup error after --wait, saying so, not a "publisher silent" at its end.
G2="239.77.19.$((1 + $$ % 250)):$((20000 + $$ % 20000))"
start_bg deadctl publish --medium udp --udp-group "$G2" --set udp.control_port=0 --rate 2k --duration 120s --idle block
wait_log deadctl '^mdcast publish: UDP multicast' 30
rc=0; "$MDCAST" subscribe --medium udp --udp-group "$G2" --set feed.control=tcp:127.0.0.1:1 --wait 2s \
  >"$WORK/deadctl-sub.log" 2>&1 || rc=$?
[ "$rc" = 3 ] || { cat "$WORK/deadctl-sub.log"; fail "a subscriber whose control plane never answered exited $rc, not 3"; }
grep -q "error: the feed was heard for [0-9]* s, but no control plane answered a Subscribe" "$WORK/deadctl-sub.log" ||
  { cat "$WORK/deadctl-sub.log"; fail "no word that the control plane never answered"; }
note "a feed heard without a control plane: $(grep -o 'error: the feed was heard[^(]*' "$WORK/deadctl-sub.log")"
kill -TERM "$PID_deadctl"
wait_pid "$PID_deadctl" 30 || fail "the publisher stopped with SIGTERM exited non-zero"
expect_error "--qkey: verbs.qkey: 'abc' is not a usable QKey: a number below 0x80000000" publish --qkey abc
printf '[verbs]\nqkey = "zz"\n' >"$WORK/qkey.toml"
expect_error "qkey.toml:2: verbs.qkey: 'zz' is not a usable QKey" --config "$WORK/qkey.toml" publish
expect_error "--crc: publisher.crc: 'maybe' is not a boolean" publish --crc maybe
printf '[udp]\ngroup = "239.1.1.1"\n' >"$WORK/group.toml"
expect_error "group.toml:2: udp.group: udp: '239.1.1.1' is not GROUP:PORT" --config "$WORK/group.toml" publish
expect_error "udp: no interface 'nosuch0'" publish --medium udp --interface nosuch0 --duration 1s
# Signed announcements: a key that is not one, a key file that is not a secrets file.
expect_error "^mdcast: --set udp.announce_public_key: udp.announce_public_key: 'abc' is not a public key \(64 hex digits" \
  subscribe --medium udp --set udp.announce_public_key=abc
expect_error "udp.announce_key_file: .*$WORK/nosuch.key" publish --medium udp --set udp.announce_key_file="$WORK/nosuch.key"
expect_error "shm ring .*mdcast-$NAME-missing.ring not found" subscribe --name "$NAME-missing" --wait 0
# A ring written by another layout version (2: before sessions were 64-bit).
python3 - "$WORK/mdcast-$NAME-old.ring" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    hdr = struct.pack("<QII", 0x3252485343444d4d, 2, 4096)
    f.write(hdr + b"\0" * (4096 + 16 * 4096 - len(hdr)))
PY
expect_error "layout version 2, this mdcast reads version 5" subscribe --name "$NAME-old" --shm-dir "$WORK" --wait 0
# A ring file anyone may write is not believed, whatever it says.
cp "$WORK/mdcast-$NAME-old.ring" "$WORK/mdcast-$NAME-open.ring"
chmod 0666 "$WORK/mdcast-$NAME-open.ring"
expect_error "mdcast-$NAME-open.ring is writable by everyone \(mode 0666\)" subscribe --name "$NAME-open" \
  --shm-dir "$WORK" --wait 0
# A 64 GiB ring (a mistyped --shm-slots) is refused before anything is allocated.
expect_error "would need 72 GiB .*more than shm.max_bytes \(4 GiB\)" publish --name "$NAME-big" --shm-slots 16777216
[ ! -e "/dev/shm/mdcast-$NAME-big.ring" ] || fail "a refused ring left its file"
expect_error "more than shm.max_bytes \(1 MiB\)" publish --name "$NAME-cap" --set shm.max_bytes=1MiB
expect_error "is not a user on this host" subscribe --name "$NAME" --set shm.publisher_user=no-such-user-mdcast --wait 0
expect_error "is not a group on this host" publish --name "$NAME-grp" --set shm.group=no-such-group-mdcast
note "all errors clear"

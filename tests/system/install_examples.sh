#!/usr/bin/env bash
# The installed package as an application sees it: `cmake --install` into a
# scratch prefix; every installed header compiles on its own against it;
# examples/ builds as a project of its own (find_package), and the subscriber
# once more with nothing but `pkg-config --cflags --libs mdcast`. Then the
# example publisher and one subscriber of each build run over shm: each
# subscriber prints exactly the lines the publisher printed, and all exit 0.
# The record example records the publisher's feed over shm into pcap files
# the installed `mdcast replay` publishes again, every message.
#
#   install_examples.sh MDCAST BUILD_DIR SOURCE_DIR    (env: CMAKE, CXX, MDCAST_SANITIZE)
source "$(dirname "$0")/lib.sh"

BUILD=${2:?usage: $0 mdcast build-dir source-dir}
SRC=${3:?usage: $0 mdcast build-dir source-dir}
CMAKE=${CMAKE:-cmake}
CXX=${CXX:-c++}
PREFIX="$WORK/prefix"
ROUNDS=100
t0=$(date +%s)

command -v pkg-config >/dev/null || { echo "SKIP: pkg-config is not installed (apt-get install pkg-config)"; exit 77; }
# A sanitized build's libraries need the sanitizer runtime in whatever links them.
san=()
[ -n "${MDCAST_SANITIZE:-}" ] && san=("-fsanitize=$MDCAST_SANITIZE" -fno-omit-frame-pointer)

note "install into $PREFIX"
"$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || fail "cmake --install failed"
for f in bin/mdcast lib/libmdcast_feed.a lib/libmdcast_shm.a lib/libmdcast_stream.a lib/libmdcast_mem.a \
         lib/cmake/mdcast/mdcastConfig.cmake lib/cmake/mdcast/mdcastConfigVersion.cmake lib/pkgconfig/mdcast.pc \
         include/mdcast/feed/publisher_agent.hpp include/mdcast/media/shm/shm_medium.hpp; do
  [ -e "$PREFIX/$f" ] || fail "$f is not installed"
done
[ ! -e "$PREFIX/include/mdcast/bench" ] || fail "the bench helpers' headers are installed"
"$PREFIX/bin/mdcast" --help >/dev/null || fail "the installed mdcast does not run"

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
read -r -a pc_cflags <<<"$(pkg-config --cflags mdcast)"
read -r -a pc_libs <<<"$(pkg-config --libs mdcast)"
note "mdcast.pc $(pkg-config --modversion mdcast): ${pc_cflags[*]} ${pc_libs[*]}"

# Only the prefix's include directory: a header that needs one the package
# lacks fails here. -I (not -isystem) so the headers' own warnings count.
headers=$(cd "$PREFIX/include" && find mdcast -name '*.hpp' | sort)
note "$(wc -w <<<"$headers") installed headers, each compiled alone"
export CXX
printf '%s\n' $headers | xargs -P "$(nproc)" -I{} sh -c \
  'echo "#include <{}>" | "$CXX" -std=c++20 -Wall -Wextra -Werror -fsyntax-only "$@" -x c++ - 2>"$0/hdr-$(echo {} | tr / _).log" \
   || echo {}' "$WORK" "${pc_cflags[@]}" >"$WORK/headers-failed.txt"
[ ! -s "$WORK/headers-failed.txt" ] || fail "headers that do not compile on their own: $(tr '\n' ' ' <"$WORK/headers-failed.txt")"
rm -f "$WORK"/hdr-*.log

note "examples/ as a project of its own (find_package(mdcast))"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
"$CMAKE" -S "$SRC/examples" -B "$WORK/examples" "${gen[@]}" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_CXX_FLAGS="-Werror ${san[*]}" >"$WORK/examples-configure.log" 2>&1 \
  || fail "examples/ does not configure against the installed package"
grep -q "^mdcast_DIR:PATH=$PREFIX/lib/cmake/mdcast$" "$WORK/examples/CMakeCache.txt" \
  || fail "examples/ found another mdcast: $(grep '^mdcast_DIR' "$WORK/examples/CMakeCache.txt")"
"$CMAKE" --build "$WORK/examples" --parallel "$(nproc)" >"$WORK/examples-build.log" 2>&1 \
  || fail "examples/ does not build against the installed package"

note "examples/subscriber.cpp with pkg-config alone"
"$CXX" -std=c++20 -Wall -Wextra -Werror "${san[@]}" "$SRC/examples/subscriber.cpp" -o "$WORK/subscriber-pc" \
  "${pc_cflags[@]}" "${pc_libs[@]}" >"$WORK/pkgconfig-build.log" 2>&1 || fail "the pkg-config build failed"

note "publisher + 2 subscribers over shm, $ROUNDS rounds"
run_bg() {  # run_bg LABEL BINARY ARGS...: stdout to LABEL.out, stderr to LABEL.log
  local label=$1; shift
  "$@" >"$WORK/$label.out" 2>"$WORK/$label.log" &
  PIDS+=($!)
  eval "PID_$label=$!"
}
run_bg pub "$WORK/examples/publisher" --name "$NAME" --subscribers 2 --rounds "$ROUNDS"
run_bg sub_cmake "$WORK/examples/subscriber" --name "$NAME"
run_bg sub_pc "$WORK/subscriber-pc" --name "$NAME"
wait_pid "$PID_sub_cmake" 30 || fail "the subscriber (CMake build) exited non-zero"
wait_pid "$PID_sub_pc" 30 || fail "the subscriber (pkg-config build) exited non-zero"
wait_pid "$PID_pub" 30 || fail "the publisher exited non-zero"

# 2 definitions, 2 statuses, per round and instrument 2 adds, a modify, an
# execution, 2 deletes; one opaque message.
want=$((4 + ROUNDS * 2 * 6 + 1))
published=$(wc -l <"$WORK/pub.out")
[ "$published" = "$want" ] || fail "the publisher printed $published messages, not $want"
[ "$(head -1 "$WORK/pub.out")" = "inst 0 #1 define ACME lot 100 exp -2" ] || fail "first message: $(head -1 "$WORK/pub.out")"
[ "$(tail -1 "$WORK/pub.out")" = "inst 0 #$((3 + ROUNDS * 6)) opaque 'ACME: dividend 0.42'" ] \
  || fail "last message: $(tail -1 "$WORK/pub.out")"
for s in sub_cmake sub_pc; do
  cmp -s "$WORK/pub.out" "$WORK/$s.out" || { diff "$WORK/pub.out" "$WORK/$s.out" | head; fail "$s: not what was published"; }
  grep -q "^subscriber: $want messages (0 recovered), 0 books from snapshots$" "$WORK/$s.log" \
    || fail "$s: $(tail -1 "$WORK/$s.log")"
done
[ ! -e "/dev/shm/mdcast-$NAME.ring" ] && [ ! -e "/dev/hugepages/mdcast-$NAME.ring" ] || fail "the ring outlived the publisher"

note "the record example over shm, its recording replayed by the installed mdcast"
run_bg rpub "$WORK/examples/publisher" --name "$NAME-rec" --subscribers 1 --rounds "$ROUNDS"
run_bg rec "$WORK/examples/record" --name "$NAME-rec" --out "$WORK/rec"
wait_pid "$PID_rec" 30 || fail "the record example exited non-zero: $(tail -3 "$WORK/rec.log")"
wait_pid "$PID_rpub" 30 || fail "the publisher (recorded) exited non-zero: $(tail -3 "$WORK/rpub.log")"
[ -s "$WORK/rec.0000.pcap" ] && [ -s "$WORK/rec.0000.pcap.idx" ] || fail "the record example wrote no recording"
recorded=$(grep -oE '^record: [0-9]+ datagrams through sequence [0-9]+ in 1 file\(s\), 0 gap\(s\)$' "$WORK/rec.log" |
           grep -oE '^record: [0-9]+' | grep -oE '[0-9]+' || echo 0)
[ "$recorded" -gt 0 ] || fail "the record example recorded nothing whole: $(tail -1 "$WORK/rec.log")"
"$PREFIX/bin/mdcast" replay --name "$NAME-rep" --speed max --linger 0s "$WORK/rec" >"$WORK/rec-replay.log" 2>&1 ||
  fail "mdcast replay of the example's recording exited non-zero: $(tail -3 "$WORK/rec-replay.log")"
grep -q "^mdcast replay: $recorded recorded datagrams ($want messages)" "$WORK/rec-replay.log" ||
  fail "the replay is not the $recorded datagrams, $want messages recorded: $(tail -1 "$WORK/rec-replay.log")"

note "the channels example (4 channels, 2 threads, the library's runtime) read by the installed mdcast subscribe --channels 4"
run_bg chpub "$WORK/examples/channels" --name "$NAME-ch" --subscribers 1 --rounds 2
run_bg chsub "$PREFIX/bin/mdcast" subscribe --name "$NAME-ch" --channels 4 --idle block --result "$WORK/chsub.toml"
wait_pid "$PID_chsub" 60 || fail "mdcast subscribe --channels 4 exited non-zero: $(tail -3 "$WORK/chsub.log")"
wait_pid "$PID_chpub" 60 || fail "the channels example exited non-zero: $(tail -3 "$WORK/chpub.log")"
grep -q "^channels: 4000 messages in " "$WORK/chpub.log" || fail "the channels example: $(tail -1 "$WORK/chpub.log")"
python3 - "$WORK/chpub.out" "$WORK/chsub.toml" <<'PY' || fail "the subscriber's books are not the channels example's"
import sys, tomllib
pub = {}
for line in open(sys.argv[1]):
    _, inst, seq, checksum = line.split()
    pub[inst] = [int(seq), checksum]
sub = tomllib.load(open(sys.argv[2], "rb"))
# The result lists every book the feed declares; the example prints those that saw an update.
got = {k: [v[0], v[1]] for k, v in sub["books"].items() if v[0] > 0}
assert len(pub) >= 8, f"the example printed {len(pub)} books"
assert got == pub, f"books differ: published {pub}, subscribed {got}"
print(f"-- {len(pub)} books identical over 4 channels")
PY
for k in 0 1 2 3; do [ ! -e "/dev/shm/mdcast-$NAME-ch.$k.ring" ] || fail "ring $k outlived the channels example"; done

note "publisher + subscriber over UDP multicast on lo"
UDP=(--medium udp --interface lo --udp-group "239.77.14.$((1 + $$ % 250)):$((20000 + $$ % 20000))")
run_bg upub "$WORK/examples/publisher" "${UDP[@]}" --subscribers 1 --rounds "$ROUNDS"
wait_log upub "^publisher: .*waiting for 1 subscriber" 30  # its medium is up: it announces itself
run_bg usub "$WORK/subscriber-pc" "${UDP[@]}"
wait_pid "$PID_usub" 30 || fail "the UDP subscriber exited non-zero: $(tail -3 "$WORK/usub.log")"
wait_pid "$PID_upub" 30 || fail "the UDP publisher exited non-zero: $(tail -3 "$WORK/upub.log")"
cmp -s "$WORK/upub.out" "$WORK/usub.out" || { diff "$WORK/upub.out" "$WORK/usub.out" | head; fail "udp: not what was published"; }
note "both subscribers printed all $want messages as published; $(($(date +%s) - t0)) s"

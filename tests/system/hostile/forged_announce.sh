#!/usr/bin/env bash
# A forged control-address announcement on an open UDP feed (docs/security.md,
# 3a). An impostor announces its own TCP listener on the group every 5 ms,
# before anyone else: once a listener that never answers (--silent), once one
# that accepts and closes at once (--close). Two subscribers start and take
# it (the only address they hear); then the real publisher starts. Each
# subscriber leaves the impostor within 2 s of taking it, says which address
# it left and why (log, udp.announce_left), follows the publisher, delivers
# every message with books identical to the publisher's, and exits 0.
#
# FA_AUTH=1 (forged_announce_auth.sh): a feed with secrets. The impostor
# answers each hello with a challenge it cannot prove (--refuse), never
# answers (--silent), or accepts and closes at once (--close). A subscriber
# leaves a refusing impostor the moment its proof fails ("it could not prove
# it knows this subscriber's secret"), a silent or closing one after 2 s, and
# never sends any of them a proof; then as above.
#
# FA_SIGNED=1 (forged_announce_signed.sh): an open feed whose publisher signs
# its announcements (udp.announce_key_file) and whose subscribers hold its
# public key (udp.announce_public_key). The impostor (silent, then close) is
# never followed: each subscriber drops its announcements (udp.announce_unsigned),
# names it once, never connects to it (the impostor accepts nothing), takes
# the publisher's signed announcement, delivers everything, exits 0.
source "$(dirname "$0")/hostile_lib.sh"

PUB_AUTH=()
AUTH_SUB=()
if [ "${FA_AUTH:-0}" = 1 ]; then
  umask 077
  "$MDCAST" secret new --identity desk-a >"$WORK/pub.secrets"
  cp "$WORK/pub.secrets" "$WORK/desk-a.secret"
  PUB_AUTH=(--secrets "$WORK/pub.secrets")
  AUTH_SUB=(--identity desk-a --secret-file "$WORK/desk-a.secret")
fi

SIGNED=${FA_SIGNED:-0}
if [ "$SIGNED" = 1 ]; then
  umask 077
  "$MDCAST" secret new --identity announcer >"$WORK/announce.key"
  PUB_AUTH+=(--set "udp.announce_key_file=$WORK/announce.key")
  AUTH_SUB+=(--set "udp.announce_public_key=$("$MDCAST" secret public "$WORK/announce.key")")
fi

run_case() {
  local variant=$1 n=$2
  local PORT=$((20000 + ($$ + n) % 20000))
  local GROUP="239.77.17.$((1 + ($$ + n) % 250)):$PORT"
  local udp=(--medium udp --udp-group "$GROUP" --interface lo --set udp.control_port=0)
  SUB_ARGS=("${udp[@]}" "${AUTH_SUB[@]}")
  WORK_CASE="$variant"
  start_attack "imp_$variant" announce "$GROUP" "--$variant" --seconds 120
  wait_for_line "imp_$variant" '^ready ' 10 || fail "the impostor ($variant) never started: $(cat "$WORK/imp_$variant.log")"
  local imp
  imp=$(grep -o 'announcing tcp:[0-9.]*:[0-9]*' "$WORK/imp_$variant.log" | cut -d' ' -f2)
  note "impostor ($variant) announces $imp"
  start_subscriber sub1
  start_subscriber sub2
  if [ "$SIGNED" = 1 ]; then
    # Heard and dropped: the impostor's announcements carry no signature.
    wait_stat "$PID_sub1" udp.announce_unsigned 1 20 || fail "sub1 never counted the impostor's unsigned announcement"
    wait_stat "$PID_sub2" udp.announce_unsigned 1 20 || fail "sub2 never counted the impostor's unsigned announcement"
  else
    # Captured: each has taken the impostor's address, the only one announced yet.
    wait_stat "$PID_sub1" udp.announce_followed 1 20 || fail "sub1 never took the impostor's announcement"
    wait_stat "$PID_sub2" udp.announce_followed 1 20 || fail "sub2 never took the impostor's announcement"
  fi
  start_bg pub publish "${udp[@]}" "${PUB_AUTH[@]}" --rate "$RATE" --duration "$DURATION" --instrument-count 200 --idle block \
    --wait-subscribers 2 --result "$WORK/pub.toml"
  wait_log pub '^mdcast publish: UDP multicast .*control tcp:' 30
  local real
  real=$(grep -o 'control tcp:[0-9.]*:[0-9]*' "$WORK/pub.log" | head -1 | cut -d' ' -f2)
  note "publisher's control $real"
  finish_subscribers sub1 sub2
  finish_publisher
  stop_attack "imp_$variant"
  check_books sub1 sub2
  check_delivered sub1 sub2
  local l left why
  if [ "$SIGNED" = 1 ]; then
    for l in sub1 sub2; do
      expect "$l never followed the impostor (udp.announce_left = $(toml_get "$WORK/$l.toml" udp.announce_left))" \
        [ "$(toml_get "$WORK/$l.toml" udp.announce_left)" = 0 ]
      expect "$l followed one announced address, the publisher's" [ "$(toml_get "$WORK/$l.toml" udp.announce_followed)" = 1 ]
      expect "$l dropped the impostor's unsigned announcements ($(toml_get "$WORK/$l.toml" udp.announce_unsigned))" \
        [ "$(toml_get "$WORK/$l.toml" udp.announce_unsigned)" -ge 1 ]
      expect "$l's log names the impostor $imp as unsigned and ignored" \
        grep -qE "names control $imp unsigned: ignored" "$WORK/$l.log"
      figure "${variant}_${l}_unsigned" "$(toml_get "$WORK/$l.toml" udp.announce_unsigned)"
    done
    expect "the impostor ($variant) was never connected to" [ "$(attack_value "imp_$variant" accepted)" = 0 ]
    figure "${variant}_messages" "$(toml_get "$WORK/sub1.toml" messages 2>/dev/null || echo none)"
    for l in sub1 sub2 pub; do mv "$WORK/$l.log" "$WORK/$variant-$l.log"; mv "$WORK/$l.toml" "$WORK/$variant-$l.toml" 2>/dev/null || true; done
    return
  fi
  case $variant in
    silent) why='connected, but no answer to its Subscribe' ;;
    refuse) why="it could not prove it knows this subscriber's secret" ;;
    *) why='its connections failed for .*(publisher closed the control connection|Connection reset by peer)' ;;
  esac
  for l in sub1 sub2; do
    left=$(toml_get "$WORK/$l.toml" udp.announce_left)
    figure "${variant}_${l}_left" "${left:-?}"
    expect "$l left the impostor ($variant) and counted it (udp.announce_left = ${left:-none})" [ "${left:-0}" -ge 1 ]
    expect "$l's log names the impostor $imp it left and why ($why), and the publisher it followed ($real)" \
      grep -qE "control $imp left: .*$why.*; following the announced $real" "$WORK/$l.log"
    grep -E "control $imp left" "$WORK/$l.log" | head -1 | sed "s/^/   $l: /"
  done
  figure "${variant}_impostor_accepted" "$(attack_value "imp_$variant" accepted)"
  figure "${variant}_messages" "$(toml_get "$WORK/sub1.toml" messages 2>/dev/null || echo none)"
  for l in sub1 sub2 pub; do mv "$WORK/$l.log" "$WORK/$variant-$l.log"; mv "$WORK/$l.toml" "$WORK/$variant-$l.toml" 2>/dev/null || true; done
}

if [ "${FA_AUTH:-0}" = 1 ]; then
  run_case refuse 0
  run_case silent 1
  run_case close 2
  for v in refuse silent close; do
    figure "${v}_impostor_challenges" "$(attack_value "imp_$v" challenges)"
  done
else
  run_case silent 0
  run_case close 1
fi
conclude

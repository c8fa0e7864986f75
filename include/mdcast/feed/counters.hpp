// The engines' counters (see mdcast/core/counter.hpp). Names are stable: they
// label the slots of counters files and `mdcast stat` output.
#pragma once

#include "mdcast/core/counter.hpp"

namespace mdcast::feed {

#define MDCAST_PUBLISHER_COUNTERS(X)                                               \
  X(messages_published, "messages accepted and sequenced")                        \
  X(messages_rejected, "messages refused as invalid for the book")                \
  X(messages_back_pressured, "publish calls answered back-pressured")             \
  X(datagrams_sent, "sequenced datagrams handed to the medium")                   \
  X(bytes_sent, "bytes of sequenced datagrams handed to the medium")              \
  X(send_back_pressured, "sends the medium refused for now (retried)")            \
  X(heartbeats_sent, "heartbeat datagrams sent")                                  \
  X(fragments_sent, "fragment messages sent")                                     \
  X(last_sequence, "last sequence committed")                                     \
  X(datagrams_replayed, "datagrams a pair member rebuilt from its input and did not send: its peer had") \
  X(pacing_rate, "current pacing rate in messages/s (0 = unpaced)")

#define MDCAST_CONTROL_COUNTERS(X)                                                 \
  X(clients_connected, "control clients currently connected")                     \
  X(client_connects, "control connections accepted")                              \
  X(client_disconnects, "control connections closed")                             \
  X(subscribes, "subscribe requests granted")                                     \
  X(requests_rejected, "requests answered with an error")                         \
  X(malformed_frames, "malformed control frames received")                        \
  X(retransmit_requests, "retransmit requests served")                            \
  X(retransmit_too_old, "retransmit requests answered too-old")                   \
  X(datagrams_retransmitted, "datagrams sent in retransmit replies")              \
  X(snapshot_requests, "snapshot requests served")                                \
  X(snapshot_instruments, "instrument books sent in snapshots")                   \
  X(status_reports, "subscriber status reports received")                         \
  X(session_queries, "session queries answered (subscribers confirming a datagram's claim)") \
  X(slowest_capacity, "lowest capacity reported by a live subscriber (msg/s)")   \
  X(longest_poll_ns, "longest control-plane poll on the publishing thread (ns)")    \
  X(auth_ok, "clients that proved they know their identity's secret")            \
  X(auth_failed, "authentication proofs refused (wrong secret or unknown identity)") \
  X(auth_delayed, "refusals answered after the failure delay")                    \
  X(auth_delay_ns, "current delay before a refused proof is answered (ns)")       \
  X(auth_unknown_identity, "hellos naming an identity not in the secrets file")   \
  X(auth_parked_frames, "frames ignored from clients waiting out a refusal")      \
  X(auth_required, "requests refused: the client had not authenticated")         \
  X(auth_protocol_errors, "authentication frames out of order, malformed or on an open feed")  \
  X(requests_overloaded, "requests refused for now: the client's budget is spent (told when to retry)") \
  X(retransmit_partial, "retransmit replies cut short by the client's budget (it asks for the rest)") \
  X(retransmit_coalesced, "retransmit replies copied from an identical reply of the same poll") \
  X(snapshot_builds, "full snapshot copies serialized from the books")          \
  X(snapshot_single_builds, "one-instrument snapshots serialized: the book changed since the copy") \
  X(snapshot_cached, "snapshot requests answered from the shared copy")         \
  X(snapshot_duplicates, "snapshot requests already being answered (same request id)") \
  X(snapshot_replaced, "full snapshot requests replaced by the same client's newer one") \
  X(snapshot_abandoned, "snapshot streams cut: their copy was too old to keep (slow reader)") \
  X(snapshot_bytes, "snapshot bytes produced for clients")                     \
  X(snapshot_streams, "snapshot requests queued or streaming now")             \
  X(snapshot_cache_bytes, "bytes held by snapshot copies alive now")             \
  X(subscribers_unlisted, "subscribed clients not in the counters file's subscriber table (every row taken)")

#define MDCAST_SUBSCRIBER_COUNTERS(X)                                              \
  X(datagrams_received, "datagrams received on the data rails")                   \
  X(datagrams_recovered, "datagrams received in retransmit replies")              \
  X(datagrams_delivered, "sequenced datagrams delivered in order")                \
  X(messages_delivered, "messages delivered to the application")                  \
  X(messages_filtered, "messages skipped by the instrument filter")               \
  X(malformed, "datagrams failing validation (dropped, recovered as gaps)")       \
  X(crc_errors, "datagrams with a CRC mismatch (subset of malformed)")            \
  X(oversized, "datagrams above max_datagram (subset of malformed)")         \
  X(foreign_channel, "datagrams for another channel")                             \
  X(untagged, "datagrams without a tag on a feed that authenticates its data (dropped before their sequence is read)") \
  X(bad_tags, "datagrams whose tag the session's data key did not make: forged or altered (dropped before their sequence is read)") \
  X(unverifiable, "tagged datagrams dropped for want of their session's data key (before the authenticated control plane sent it)") \
  X(dropped_own, "own looped-back datagrams dropped")                             \
  X(stale_session, "datagrams of the session left behind, dropped")               \
  X(claims_held, "datagrams claiming another session or a far sequence, dropped until confirmed") \
  X(claims_confirmed, "claims (session, end, far sequence) the control plane confirmed") \
  X(forged_datagrams, "datagrams whose claim the control plane refuted (never acted on)") \
  X(forged_runs, "runs of datagrams delivered before a query yet beyond the publisher's answer: cut, the real ones taken again") \
  X(pair_ahead_dropped, "datagrams held past the tail of the pair member asked, within pair_lag: the other member's, dropped until it sends them") \
  X(confirmations, "session queries that kept the confirmed position within half a window of the data") \
  X(confirmations_unanswered, "times no answer came within the request timeout: data past a window of the confirmed position was taken unconfirmed") \
  X(claims_overtaken, "claims the answer could not settle: data sent after it (dropped, recovered as a gap)") \
  X(unconfirmed_held, "datagrams held before the authenticated control plane named their session") \
  X(session_queries, "session queries sent to confirm what a datagram claimed")   \
  X(duplicates, "datagrams already delivered or buffered")                        \
  X(heartbeats, "heartbeats received")                                            \
  X(gaps, "gaps detected")                                                        \
  X(retransmit_requests, "retransmit requests sent")                              \
  X(retransmit_timeouts, "retransmit requests that timed out")                    \
  X(retransmit_too_old, "retransmit requests answered too-old")                   \
  X(snapshots_requested, "full snapshots requested")                              \
  X(snapshots_applied, "full snapshots applied")                                  \
  X(skipped_by_snapshot, "buffered datagrams made redundant by a snapshot")       \
  X(window_discards, "datagrams outside the recovery window (asked for again)")   \
  X(messages_superseded, "messages already covered by a snapshot, skipped")       \
  X(window_overflows, "datagrams beyond the recovery window (forces snapshot)")   \
  X(instrument_recoveries, "single-instrument recoveries started")                \
  X(instrument_recovered, "single-instrument recoveries completed")               \
  X(instrument_gaps, "per-instrument sequence gaps seen")                         \
  X(book_errors, "messages the local book refused (forces recovery)")            \
  X(checksum_ok, "book checksums verified equal")                                 \
  X(checksum_mismatch, "book checksums found different (forces recovery)")        \
  X(fragments, "fragment messages received")                                      \
  X(reassembled, "messages reassembled from fragments")                           \
  X(reassembly_dropped, "fragments dropped (orphaned, out of order, evicted)")    \
  X(unknown_messages, "messages of unknown type skipped")                         \
  X(session_changes, "publisher sessions changed (resynchronised)")               \
  X(publisher_timeouts, "publisher silences longer than the timeout")             \
  X(control_errors, "error replies received from the publisher")                  \
  X(rail_a_first, "datagrams whose first copy came on rail A")                    \
  X(rail_b_first, "datagrams whose first copy came on rail B")                    \
  X(rail_a_silences, "times rail A brought nothing for publisher_timeout while the other rail went on: its pair member, or the path to it, lost") \
  X(rail_b_silences, "times rail B brought nothing for publisher_timeout while the other rail went on: its pair member, or the path to it, lost") \
  X(rail_a_returns, "times rail A was heard again after such a silence")          \
  X(rail_b_returns, "times rail B was heard again after such a silence")          \
  X(silence_gap_ns, "time without new data the rail silences caused (ns): for each, the interval from the last new sequence delivered before the silent rail's last datagram to the first after it") \
  X(longest_data_gap_ns, "longest interval between deliveries of new sequences in a session (ns), to a control poll's precision; an interval in which a member's heartbeats showed a pause (its tail twice on its rail, and nothing beyond what was delivered: no input, the end of session) is not counted") \
  X(next_sequence, "next sequence to deliver")                                    \
  X(highest_sequence, "highest sequence seen")                                   \
  X(auth_failures, "handshakes failed: the publisher did not prove itself, or refused us") \
  X(unauthenticated_frames, "control frames ignored before the publisher proved itself")

MDCAST_DEFINE_COUNTER_STRUCT(PublisherCounters, MDCAST_PUBLISHER_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(ControlCounters, MDCAST_CONTROL_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(SubscriberCounters, MDCAST_SUBSCRIBER_COUNTERS);

}  // namespace mdcast::feed

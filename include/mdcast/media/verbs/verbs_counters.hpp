// Counters of the verbs medium (see mdcast/core/counter.hpp): what the data
// path did and what failed there. The data path only counts; the control
// code (PublisherMedium::poll_control, SubscriberMedium::poll) reads the
// failure state and acts (QP recovery, reconnect, an Error to the caller).
#pragma once

#include "mdcast/core/counter.hpp"

namespace mdcast::media::verbs {

#define MDCAST_VERBS_SINK_COUNTERS(X)                                                     \
  X(datagrams_posted, "datagrams posted to the UD send queue")                           \
  X(bytes_posted, "payload bytes posted")                                                \
  X(inline_sends, "sends posted inline (payload copied into the WQE)")                   \
  X(zero_copy_sends, "sends posted straight from a registered retransmit-ring slot")     \
  X(staged_sends, "sends copied into a registered staging slot (heartbeats)")            \
  X(signaled, "signaled sends (one every signal_every)")                                 \
  X(completions, "send completions reaped")                                              \
  X(send_queue_full, "sends refused because the send queue was full (back-pressure)")    \
  X(post_send_errors, "ibv_post_send failures")                                          \
  X(completion_errors, "send completions with an error status")                          \
  X(qp_recoveries, "times the UD QP was reset and brought back to RTS")                  \
  X(loopback_received, "own datagrams looped back to the publisher's QP")                \
  X(probe_post_errors, "ibv_post_recv failures re-posting a loopback probe buffer")      \
  X(send_only_join, "1 when the group was joined send-only (no self-delivery)")               \
  X(dropped_link_down, "datagrams not posted while the port was down (kept in the retransmit ring)")

#define MDCAST_VERBS_RECEIVER_COUNTERS(X)                                                 \
  X(completions, "receive completions polled")                                           \
  X(datagrams, "datagrams handed to the engine")                                         \
  X(bytes, "payload bytes handed to the engine (GRH excluded)")                          \
  X(imm_gaps, "jumps in the immediate data (quick gap detection)")                       \
  X(imm_missing, "datagrams missing according to the immediate data")                    \
  X(imm_mismatch, "immediate data disagreeing with the header sequence")                 \
  X(unsequenced, "heartbeats, and datagrams without immediate data")                     \
  X(short_completions, "completions shorter than the GRH (dropped)")                     \
  X(completion_errors, "receive completions with an error status")                       \
  X(post_recv_errors, "ibv_post_recv failures (slots retried on the next poll)")         \
  X(reposted, "receive buffers re-posted")                                               \
  X(posted_low, "fewest receive buffers posted at a poll (ring headroom)")               \
  X(blocking_waits, "waits on the completion channel (adaptive mode)")                   \
  X(wakeups, "completion events that ended a wait")                                      \
  X(qp_recoveries, "times the UD QP was reset and its ring re-posted")

#define MDCAST_VERBS_SERVER_COUNTERS(X)                                                   \
  X(connect_requests, "control connection requests")                                     \
  X(rejected, "connection requests rejected (bad private data, no resources)")           \
  X(clients_connected, "control clients connected now")                                  \
  X(disconnects, "control clients gone (any reason)")                                    \
  X(cut_slow, "clients cut off: replies beyond the per-client byte limit")               \
  X(cut_malformed, "clients cut off: malformed stream or too many errors")               \
  X(cut_errors, "clients cut off: a completion or post error on their QP")               \
  X(frames_in, "control frames received")                                                \
  X(frames_out, "control frames queued to clients")                                      \
  X(bytes_out, "reply bytes sent")                                                       \
  X(sends_posted, "RC SENDs posted (chunks of <= send_chunk bytes)")                     \
  X(post_errors, "ibv_post_send/recv failures on control QPs")                           \
  X(ring_advertised, "connections accepted with the ring's rkey in private data")        \
  X(refused_full, "connection requests refused: every admitted slot (max_clients) is taken") \
  X(evicted_unadmitted, "un-admitted connections closed to make room for a new one")      \
  X(cut_refused_admission, "clients cut at admission: max_clients already admitted")       \
  X(cut_refused_share, "clients cut at admission: their address already holds max_clients_per_peer") \
  X(refused_peers, "connection requests refused: an address outside control.allow")       \
  X(cut_memory, "clients cut off: all replies together passed the budget, theirs the largest") \
  X(cut_oversize, "of cut_malformed: a frame longer than allowed announced")              \
  X(timeouts_unadmitted, "connections closed: not admitted within the timeout")           \
  X(timeouts_partial_frame, "connections closed: a frame begun and not finished in time") \
  X(timeouts_idle, "admitted clients closed: no frame within the idle timeout")           \
  X(budget_deferred, "times a client's frames waited for a later poll (work budget)")     \
  X(writable_calls, "on_writable calls (a streamed reply continued)")

#define MDCAST_VERBS_CLIENT_COUNTERS(X)                                                   \
  X(connects, "control connections established")                                         \
  X(disconnects, "control connections lost")                                             \
  X(connect_failures, "connection attempts that failed (retried)")                       \
  X(frames_sent, "control frames sent over RC")                                          \
  X(frames_received, "control frames received over RC")                                  \
  X(send_dropped, "frames refused while disconnected or over the queue limit")           \
  X(read_requests, "retransmit requests served by RDMA READ")                            \
  X(read_wrs, "RDMA READ work requests posted")                                          \
  X(read_bytes, "bytes fetched by RDMA READ")                                            \
  X(read_validated, "datagrams fetched by RDMA READ and validated")                      \
  X(read_invalid, "slots read that failed validation (overwritten, not yet written)")    \
  X(read_fallbacks, "retransmit requests forwarded over RC after a READ attempt")        \
  X(read_errors, "RDMA READ completions with an error status")                           \
  X(rc_retransmit_requests, "retransmit requests forwarded to the publisher over RC")    \
  X(post_errors, "ibv_post_send/recv failures")

MDCAST_DEFINE_COUNTER_STRUCT(SinkCounters, MDCAST_VERBS_SINK_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(ReceiverCounters, MDCAST_VERBS_RECEIVER_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(ServerCounters, MDCAST_VERBS_SERVER_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(ClientCounters, MDCAST_VERBS_CLIENT_COUNTERS);

// The port and group watched, and joined again when lost (verbs_link.hpp);
// the same names as the UDP medium's link.* counters.
#define MDCAST_VERBS_LINK_COUNTERS(X)                                                                           \
  X(down, "times the port was seen down (IBV_EVENT_PORT_ERR, or its state read every 100 ms)")                  \
  X(rejoins, "times the multicast group was joined again: after the port came back, a group error or a fabric event") \
  X(rejoin_failures, "attempts to join the group again that failed (retried 10 ms later, doubling up to 1 s)")  \
  X(silence_rejoins, "groups joined again because the port is up and nothing was heard for 1 s (subscribers)")  \
  X(group_errors, "RDMA_CM_EVENT_MULTICAST_ERROR: the group was deleted or failed (subnet manager, device)")     \
  X(fabric_events, "SM change, client re-register, LID, GID, P_Key or address change: the group joined again")          \
  X(down_ns, "time without data link events caused: from the port seen down (or the group lost) to data flowing again") \
  X(rails_down, "1 while the port is down or the group not yet joined again (a level: alert while above 0)")
MDCAST_DEFINE_COUNTER_STRUCT(LinkCounters, MDCAST_VERBS_LINK_COUNTERS);

// The shared RC control endpoint of a publisher of several channels (verbs_front_door.hpp).
#define MDCAST_VERBS_DOOR_COUNTERS(X)                                                                  \
  X(connect_requests, "RC connection requests at the shared control endpoint")                          \
  X(routed, "requests handed to their channel's control server")                                        \
  X(unknown_channel, "requests rejected: the hello named a channel this publisher lacks")               \
  X(no_channel, "requests rejected: no mdcast hello, or one that names no channel (version 1)")         \
  X(channel_busy, "requests rejected: the channel's server was gone or had 64 requests waiting")
MDCAST_DEFINE_COUNTER_STRUCT(VerbsDoorCounters, MDCAST_VERBS_DOOR_COUNTERS);

}  // namespace mdcast::media::verbs

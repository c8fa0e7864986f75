// SubscriberCore: the medium- and handler-independent half of a subscriber
// (feed::Subscriber<Handler>, subscriber.hpp, is the other half).
//
// It owns the state and everything that is not the in-order live path: the
// recovery window, retransmit requests (timeouts, retries), full and
// per-instrument snapshots (hold and replay), sessions, heartbeats and
// checksums, A/B rail accounting, control frames, the instrument filter and
// the counters. It is compiled once, in src/feed/subscriber_*.cpp, instead of
// once per handler type: the recovery code is large and cold, and only the
// live path gains from being inlined into the handler.
//
// The split of work:
//   Subscriber<H>::on_datagram  validates, screens the common case (right
//                               channel, session, sequence) and delivers it
//                               inline, calling H directly per message;
//   SubscriberCore              everything else, reached by a direct call
//                               from the live path when something is
//                               unusual; what it delivers itself (the window
//                               after a gap, held messages, snapshots,
//                               resets, events) reaches the handler through
//                               the small virtual interface below, which
//                               Subscriber<H> implements - one indirect call
//                               per recovered datagram, never per live
//                               message.
//
// The core is the engine's media::ControlEvents: a medium's poll_control
// reports connection changes, control frames and datagrams it fetched itself
// (RDMA READ) straight to it.
//
// Requests leave the data path. Processing a datagram sends no control
// frame: what a datagram raises - a full snapshot (the window overflowed, a
// checksum disagreed), an instrument's recovery (its sequence jumped, its
// book refused a message), a query about a claim (another session, an end,
// a sequence far ahead) - is only marked due ("not sent", in slots and
// flags that exist from construction), and poll() sends whatever is due,
// encoded into a frame buffer the core allocated up front. Gaps were always
// asked for from poll() (after reorder_wait). So a datagram costs no
// allocation, no system call and no call back into the medium from inside
// its own poll, and the requests poll() sends allocate nothing either (the
// subscription, its handshake and filter changes still may).
//
// The price, bounded: a request a datagram raises goes out at the next
// poll(), so its latency grows by at most one control round - with
// SubscriberAgent, control_poll_ns (100 us by default) plus the few duty
// rounds SubscriberAgent::run may take to read the clock (16 busy, 64 idle).
// A request raised by a control frame (the datagrams of a retransmit reply,
// a snapshot's end) goes out in the poll() of the same control round: the
// agent polls the engine right after the medium's control plane. The
// subscription's acknowledgement sends what waited for it at once.
//
// Single-threaded. Construction throws Error for an invalid configuration;
// everything else is noexcept except changing the filter (add/remove
// instruments), which may allocate.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/feed/loss_report.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::feed {

enum class Rail : uint8_t { kA = 0, kB = 1, kRecovery = 2 };

struct Delivery {
  uint64_t sequence;         // datagram sequence
  uint64_t send_time_ns;     // publisher clock when the datagram's first message was published
  uint64_t receive_time_ns;  // the `now` given with the datagram
  bool recovered;            // delivered late: retransmitted, reordered or held for recovery
};

enum class SubscriberEvent : uint8_t {
  kPublisherSilent,   // nothing from the publisher for publisher_timeout
  kPublisherBack,
  kSessionEnded,      // the publisher ended its session cleanly (confirmed by the control plane)
  kControlError,      // an error reply (detail has its text)
  kSessionChanged,
  kForgedRun,         // datagrams the publisher never sent were delivered, and cut (detail: how many)
};
// A few words for the event ("publisher silent"), for a log line.
[[nodiscard]] std::string_view to_string(SubscriberEvent e) noexcept;

using media::ControlChannel;

class SubscriberCore : public media::ControlEvents {
 public:
  SubscriberCore(const SubscriberCore&) = delete;
  SubscriberCore& operator=(const SubscriberCore&) = delete;

  // media::ControlEvents. A (re)connection subscribes; once the subscription
  // is acknowledged, every request that was outstanding when the previous
  // connection went away is sent again at once: its reply died with that
  // connection, so waiting for request_timeout would only delay recovery.
  void on_control_connected(uint64_t now) noexcept final;
  void on_control_disconnected() noexcept final;
  void on_control_frame(std::span<const std::byte> frame, uint64_t now) noexcept final;
  // Datagrams the medium fetched itself for request_retransmit(rid, ...):
  // handled as a RetransmitReply with status ok would be (the request is
  // matched and retired, another session's answer is ignored, each datagram
  // goes through the recovery rail). An empty span means the medium fetched
  // nothing and did not ask the publisher either: the request stays
  // outstanding and is sent again at the next poll(), counting as one of its
  // retries, so a medium that can never fetch a range ends in a snapshot
  // after max_retries instead of asking forever (and nothing is re-sent from
  // inside the medium's own callback).
  void on_retransmitted(uint32_t rid, uint64_t session, std::span<const std::span<const std::byte>> datagrams,
                        uint64_t now) noexcept final;
  // What the engine knows the publisher sent: media say so when no data comes.
  [[nodiscard]] uint64_t publisher_position() const noexcept final { return highest_seen_; }

  // The control round's part of the engine: subscribe retries, request
  // timeouts, gap requests, status reports, publisher silence, and every
  // request marked due since the last call (see "Requests leave the data
  // path" above). Call from the duty loop, at least every control_poll_ns:
  // that bounds how long a request raised by a datagram waits.
  void poll(uint64_t now) noexcept;
  // Silence up to `now` is not the publisher's (this host's own link is
  // down): the publisher_timeout counts from now on, if it counts at all.
  void hold_silence(uint64_t now) noexcept {
    if (last_rx_ != 0 && now > last_rx_) last_rx_ = now;
  }

  // The application's latency figures, sent with each status report to a
  // publisher that reads them (its view of its subscribers shows them).
  // The engine measures no latency itself: only the application knows when
  // a message is handled and which clock the feed's send time can be read
  // against.
  void report_latency(const wire::LatencyReport& r) noexcept { latency_ = r; }

  // Changes the filter; new instruments are recovered by snapshot.
  void add_instruments(std::span<const uint32_t> ids, uint64_t now);
  void remove_instruments(std::span<const uint32_t> ids);

  [[nodiscard]] const SubscriberCounters& counters() const noexcept { return *counters_; }
  [[nodiscard]] const book::BookSet* books() const noexcept { return books_.get(); }
  [[nodiscard]] uint64_t session() const noexcept { return session_; }
  [[nodiscard]] uint64_t next_sequence() const noexcept { return next_seq_; }
  [[nodiscard]] uint64_t highest_sequence() const noexcept { return highest_seen_; }
  [[nodiscard]] bool subscribed() const noexcept { return subscribed_; }
  // The session ended: confirmed by the control plane (a heartbeat alone only
  // asks), at end_sequence(). Without a control channel a heartbeat decides.
  [[nodiscard]] bool session_ended() const noexcept { return session_ended_; }
  [[nodiscard]] uint64_t end_sequence() const noexcept { return end_seq_; }
  // Everything through the confirmed end of session was delivered.
  [[nodiscard]] bool delivered_to_end() const noexcept { return session_ended_ && caught_up() && next_seq_ > end_seq_; }
  // The current session came from the control plane (a subscription
  // acknowledgement or a session status), not only from data.
  [[nodiscard]] bool session_confirmed() const noexcept { return session_confirmed_; }
  // The publisher's last sequence as its control plane last said it (0: not yet).
  [[nodiscard]] uint64_t confirmed_last() const noexcept { return confirmed_last_; }
  [[nodiscard]] bool in_snapshot() const noexcept { return mode_ == Mode::kSnapshot; }
  [[nodiscard]] bool recovering() const noexcept {
    return mode_ == Mode::kSnapshot || next_seq_ <= highest_seen_ || active_irecs() > 0;
  }
  // True once everything the publisher announced has been delivered.
  [[nodiscard]] bool caught_up() const noexcept { return session_ != 0 && !recovering(); }
  // An answer from the control plane is expected: subscribing, a query, a
  // retransmit or a snapshot outstanding, a gap being recovered. A medium's
  // sleep (a futex on the shm ring) does not watch the control socket, so a
  // blocking idle loop naps briefly then, and longer when nothing is owed.
  [[nodiscard]] bool awaiting_control() const noexcept {
    return (ctl_ != nullptr && !subscribed_) || query_sent_ || noted_.kinds != 0 || n_reqs_ != 0 || recovering();
  }
  [[nodiscard]] bool wants(uint32_t inst) const noexcept { return inst < n_inst_ && filter_[inst]; }
  [[nodiscard]] uint32_t instrument_seq(uint32_t inst) const noexcept { return last_iseq_[inst]; }
  [[nodiscard]] size_t buffered() const noexcept;
  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }
  [[nodiscard]] bool subscribe_refused() const noexcept { return subscribe_refused_; }
  // Since when the control peers this subscriber reached could not prove
  // they know its secret, with no subscription since (0: not so). A forged
  // announcement's listener is one; a runtime calls it a refusal only when
  // it lasts (subscriber.wait), giving the medium time to find the publisher.
  [[nodiscard]] uint64_t peer_unproven_since() const noexcept { return peer_unproven_since_; }
  // This connection's peer failed the handshake: the medium should leave it.
  [[nodiscard]] bool control_peer_failed() const noexcept override { return peer_failed_; }
  // With a secret configured: the publisher of the current (or, while
  // reconnecting, the last) control connection proved it knows the secret,
  // and did not refuse ours since; always true on an open feed. The data
  // plane is covered through the data key this handshake delivers (tagged
  // data); where it is untagged, whatever confirms datagrams through the
  // control plane should insist on this.
  [[nodiscard]] bool publisher_proven() const noexcept {
    return !cfg_.secret || auth_.stage == ClientAuth::Stage::kProven;
  }
  [[nodiscard]] const SubscriberConfig& config() const noexcept { return cfg_; }
  // Where to record each gap (feed/loss_report.hpp); null: nowhere. Must
  // outlive the engine; the report may be shared by every channel's engine
  // of one thread.
  void report_losses(LossReport* r) noexcept { losses_ = r && !r->empty() ? r : nullptr; }

 protected:
  SubscriberCore(const SubscriberConfig& cfg, ControlChannel* control, SubscriberCounters* counters);
  ~SubscriberCore() override;

  // ---- implemented by Subscriber<H>: how the core's deliveries reach H --
  // A datagram from a retransmit reply (or fetched by the medium): through
  // on_datagram on the recovery rail, so it is screened like any other.
  virtual void receive_recovered(std::span<const std::byte> d, uint64_t now) noexcept = 0;
  // A datagram that waited for the data key, screened again now that it is here.
  virtual void receive_awaited(std::span<const std::byte> d, Rail rail, uint64_t now) noexcept = 0;
  // A validated datagram from the window, now next in sequence.
  virtual void deliver_buffered(std::span<const std::byte> d, const wire::DatagramHeader& h,
                                uint64_t received) noexcept = 0;
  // A held message of a recovered instrument, replayed after its snapshot.
  virtual void replay_held(wire::MessageView v, const Delivery& dl) noexcept = 0;
  virtual void notify_snapshot(uint32_t inst, const book::BookSet* books) noexcept = 0;
  virtual void notify_reset(uint64_t session) noexcept = 0;
  virtual void notify_event(SubscriberEvent e, std::string_view detail) noexcept = 0;

  // ---- out of line for the live path: everything unusual -----------------
  // None of these sends: a request they raise is marked due for poll().
  // A datagram the common-case screen did not pass: counts why and returns
  // whether to go on (a newer session is adopted and goes on).
  bool admit(const wire::DatagramHeader& h, wire::DatagramCheck chk, size_t size) noexcept;
  // A sequenced datagram at or beyond ahead_limit(): it claims the
  // publisher is further than the window reaches. True: act on it (the
  // control plane confirmed that far, or there is none); false: it was
  // dropped and counted, and the control plane is asked.
  bool plausible_ahead(uint64_t seq, bool sequenced) noexcept;
  [[nodiscard]] uint64_t ahead_limit() const noexcept { return window_base() + n_slots_; }
  void publisher_back() noexcept;
  void on_unsequenced(std::span<const std::byte> d, const wire::DatagramHeader& h, Rail rail, uint64_t now) noexcept;
  // Out of order, or anything while a snapshot is awaited: into the window.
  void store(std::span<const std::byte> d, uint64_t seq, Rail rail, uint64_t now) noexcept;
  // Delivers what the window holds from next_seq_ on, then updates the gap.
  void drain(uint64_t now) noexcept;
  void note_gap(uint64_t now) noexcept;
  // Adds a fragment; true when it completed a message that validates (whole
  // views the reassembly buffer until the next fragment).
  bool reassemble(const wire::FragmentView& f, wire::MessageView& whole) noexcept;
  void hold(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept;
  // The message's instrument sequence is not last + 1.
  void out_of_sequence(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept;
  void book_refused(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept;

  void rail_first(Rail r) noexcept {
    if (r == Rail::kA) counters_->rail_a_first.add();
    else if (r == Rail::kB) counters_->rail_b_first.add();
  }
  [[nodiscard]] size_t slot_of(uint64_t seq) const noexcept { return seq % n_slots_; }
  [[nodiscard]] uint64_t window_base() const noexcept { return next_seq_ > floor_ ? next_seq_ : floor_; }
  [[nodiscard]] bool present(uint64_t seq) const noexcept { return meta_[slot_of(seq)].seq == seq; }

  // kUnconfirmed: an authenticating subscriber's first session, from data,
  // until the control plane names it: everything waits in the window.
  enum class Mode : uint8_t { kLive, kSnapshot, kUnconfirmed };
  static constexpr uint8_t kNoRec = 0xff;  // irec_of_: the instrument is not being recovered
  struct Meta {
    uint64_t seq = 0;  // 0: empty
    uint64_t recv = 0;
    uint16_t len = 0;
  };

  // ---- state the live path reads and advances ---------------------------
  // Datagrams that may wait for the data key: what arrives in the control
  // poll intervals between the publisher's first datagram and its key frame
  // being read (73 under ASan at 40k msg/s in netns.credential); 2 MiB at
  // the largest datagram, allocated only where tags are required.
  static constexpr size_t kAwaitingKey = 512;
  struct Awaiting {
    uint16_t len = 0;
    Rail rail = Rail::kA;
  };

  SubscriberConfig cfg_;
  std::unique_ptr<SubscriberCounters> owned_counters_;
  SubscriberCounters* counters_;
  std::unique_ptr<book::BookSet> books_;
  uint32_t n_inst_;
  const bool tags_required_;
  bool have_data_key_ = false;
  bool key_this_connection_ = false;
  uint64_t data_key_session_ = 0;
  wire::DataKey data_key_{};
  std::unique_ptr<std::byte[]> awaiting_;  // kAwaitingKey slots of max_datagram (tags_required_ only)
  std::array<Awaiting, kAwaitingKey> awaiting_meta_{};
  size_t n_awaiting_ = 0;
  std::unique_ptr<uint8_t[]> filter_;
  std::unique_ptr<uint32_t[]> last_iseq_;
  std::unique_ptr<uint8_t[]> irec_of_;
  size_t n_slots_;
  std::unique_ptr<Meta[]> meta_;

  Mode mode_ = Mode::kLive;
  uint64_t session_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t highest_seen_ = 0;  // never below a buffered sequence: the live path skips the window on that
  uint64_t last_rx_ = 0;
  // When each rail (A, B, recovery) last brought an admitted datagram: one
  // store beside last_rx_, so that poll() can tell one rail's silence from
  // the publisher's.
  std::array<uint64_t, 3> rail_rx_{};
  bool publisher_silent_ = false;
  bool gap_open_ = false;
  uint64_t confirmed_last_ = 0;  // the publisher's last sequence, as the control plane last said
  // Sequences from here on are claims (cfg_.confirm_ahead): a window and
  // pair_lag past confirmed_last_ once the session is confirmed; before, none.
  uint64_t confirm_limit_ = UINT64_MAX;
  void confirm_last(uint64_t last) noexcept {
    confirmed_last_ = std::max(confirmed_last_, last);
    if (cfg_.confirm_ahead && ctl_ && session_confirmed_) confirm_limit_ = confirmed_last_ + n_slots_ + cfg_.pair_lag;
  }

  // Tagged data (SubscriberConfig::authenticate_data, with a secret): every
  // datagram must carry a tag the session's data key made, checked before
  // anything else reads it. False (and counted) when it does not.
  [[nodiscard]] bool tags_required() const noexcept { return tags_required_; }
  // A datagram whose session has no key yet waits (a few, copied) for the
  // control plane's: the publisher may send its first datagrams before the
  // key and acknowledgement reach us.
  [[nodiscard]] bool authentic(std::span<const std::byte> d, const wire::DatagramHeader& h, Rail rail,
                               uint64_t now) noexcept;

 private:
  void await_key(std::span<const std::byte> d, Rail rail) noexcept;
  struct Request {
    uint32_t rid;
    uint64_t from;
    uint32_t count;
    uint64_t deadline;
    uint32_t retries;
    bool sent;  // false: due now (the next poll, or the ack of a new subscription), not at `deadline`
  };
  struct InstrumentRecovery {
    bool busy = false;
    bool sent = false;  // false (while busy): due now, as Request::sent
    bool got_chunk = false;
    bool overflow = false;
    uint32_t inst = 0;
    uint32_t rid = 0;
    uint64_t deadline = 0;
    uint32_t retries = 0;
    size_t hold_len = 0;
    std::unique_ptr<std::byte[]> hold;
  };
  static constexpr size_t kHoldHeader = 16;  // u64 sequence, u64 send time, then the message

  [[nodiscard]] uint32_t active_irecs() const noexcept;

  // subscriber_core.cpp: sessions, heartbeats
  void start_session(uint64_t s) noexcept;
  void check_heartbeat(const wire::HeartbeatView& hb, uint8_t flags, Rail rail, uint64_t now) noexcept;

  // subscriber_session.cpp: what the control plane confirms. A datagram
  // that claims a new session, an end of session or a sequence far ahead
  // never acts alone: the claim is noted, the publisher asked (one query in
  // flight, sent by the next poll, retried on the request timeout), and the
  // answer decides.
  enum Claim : uint8_t { kClaimSession = 1, kClaimEnd = 2, kClaimAhead = 4, kClaimNotYet = 8 };
  bool other_session(uint64_t s) noexcept;  // true: adopted (no control plane to ask)
  void claim(Claim c) noexcept;
  void forget_query() noexcept;
  void send_query(uint64_t now) noexcept;
  void poll_query(uint64_t now) noexcept;
  void on_session_status(uint32_t rid, const wire::SessionStatus& b, uint64_t now) noexcept;
  void session_confirmed_by(uint64_t session, uint64_t last_seq, uint64_t now) noexcept;
  void end_confirmed(uint64_t end_seq, uint64_t now) noexcept;
  // forged: what is dropped past last_seq is counted as forged; else as the
  // other member of a pair's, ahead of the one asked.
  void clamp_to(uint64_t last_seq, bool forged = true) noexcept;
  void forged_run(uint64_t last_seq) noexcept;

  // subscriber_recovery.cpp: retransmits, snapshots, per-instrument recovery
  void request_missing(uint64_t now) noexcept;
  void send_retransmit(Request& r, uint64_t now) noexcept;
  void retransmit_answered(uint32_t rid, uint64_t session, wire::RetransmitStatus status,
                           std::span<const std::span<const std::byte>> datagrams, uint64_t now) noexcept;
  void poll_requests(uint64_t now) noexcept;
  void enter_snapshot() noexcept;
  void send_snapshot_request(uint64_t now) noexcept;
  void apply_snapshot_run(std::span<const std::byte> run, int irec) noexcept;
  void clear_filtered() noexcept;
  void finish_snapshot(uint64_t snap_seq, uint64_t now) noexcept;
  void on_snapshot_data(uint32_t rid, const wire::SnapshotData& b) noexcept;
  void on_snapshot_done(uint32_t rid, const wire::SnapshotDone& b, uint64_t now) noexcept;
  void start_irec(uint32_t inst) noexcept;
  void send_irec(InstrumentRecovery& r, uint64_t now) noexcept;
  void finish_irec(int idx, uint64_t now) noexcept;
  void cancel_irecs() noexcept;
  void mark_unsent() noexcept;
  void resend_unsent(uint64_t now) noexcept;

  // subscriber_control.cpp: the subscription and the control plane
  void on_subscribe_ack(uint32_t rid, const wire::SubscribeAck& b, uint64_t now) noexcept;
  void on_error_reply(uint32_t rid, const wire::ErrorReply& b) noexcept;
  // again: the deadline passed; the same Subscribe (rid) is sent again, and
  // waits twice as long (up to 8x): an acknowledgement that comes late still counts.
  void send_subscribe(uint64_t now, bool again = false) noexcept;
  void send_status(uint64_t now) noexcept;
  // The channel's refusal (false) or failure to queue (an exception) drops
  // the frame: its request's deadline asks again.
  void send(std::span<const std::byte> f) noexcept;
  [[nodiscard]] std::span<std::byte> frame_buffer() noexcept { return {frame_.get(), frame_bytes_}; }
  // The first n bytes of the frame buffer, as encode_control wrote them (0: it did not fit).
  void send_encoded(size_t n) noexcept {
    if (n) send(std::span<const std::byte>(frame_.get(), n));
  }
  void set_error(std::string_view a, std::string_view b, std::string_view c = {}) noexcept;

  // subscriber_auth.cpp: with cfg_.secret, the mutual handshake comes before
  // the subscription, and until the publisher has proven itself no other
  // frame from it is acted on.
  [[nodiscard]] bool auth_pending() const noexcept { return cfg_.secret && auth_.stage != ClientAuth::Stage::kProven; }
  void send_hello(uint64_t now) noexcept;
  // True when the frame belonged to the handshake or was ignored for want of it.
  bool on_auth_frame(std::span<const std::byte> frame, uint64_t now) noexcept;
  // True when an error reply refused our proof.
  bool auth_refused(uint32_t rid, const wire::ErrorReply& b) noexcept;
  void auth_failed(std::string_view why, uint64_t now) noexcept;
  void on_data_key(const wire::AuthFrame& f, uint64_t now) noexcept;


  ControlChannel* ctl_;
  Reassembler reasm_;

  // Window of out-of-order datagrams, indexed by sequence modulo n_slots_.
  size_t slot_bytes_;
  std::unique_ptr<std::byte[]> window_;
  uint64_t floor_ = 0;  // sequences below this were abandoned to a snapshot

  uint64_t gap_since_ = 0;
  bool scan_needed_ = false;
  bool session_ended_ = false;
  uint64_t end_seq_ = 0;
  bool session_confirmed_ = false;
  uint64_t previous_session_ = 0;  // its late datagrams are stale, not a claim
  uint64_t checksum_snapshot_after_ = 0;

  // What datagrams claimed, and how many stood behind each kind of claim
  // (counted as forged if refuted).
  struct Claims {
    uint8_t kinds = 0;   // Claim bits
    uint64_t ahead = 0;  // the highest sequence claimed beyond the window
    uint64_t held_session = 0, held_end = 0, held_ahead = 0;
    void merge(const Claims& o) noexcept {
      kinds |= o.kinds;
      ahead = std::max(ahead, o.ahead);
      held_session += o.held_session;
      held_end += o.held_end;
      held_ahead += o.held_ahead;
    }
  };
  // An answer judges only the claims made before its query went out: it was
  // written before whatever came later was sent (an end of session that
  // follows a confirmation in flight is no forgery). Claims noted since wait
  // for the next query.
  Claims asked_;  // what the query in flight asks about
  Claims noted_;  // claimed since it was sent: a query is due once it is answered
  uint64_t claimed_session_ = 0;  // the last other session a datagram claimed
  bool query_sent_ = false;
  uint64_t query_delivered_ = 0;  // the last sequence delivered when the query in flight was sent
  // The highest sequence seen when the query in flight was sent: its answer
  // judges what came before it, not what arrived while an answer held up by
  // a TCP retransmission was on its way (the publisher sent that later).
  uint64_t query_highest_ = 0;
  uint64_t query_since_ = 0;      // when the query in flight (or the first of its retries) was sent
  // A retry repeats the question (its rid and what it judges): an answer
  // slower than the timeout still settles it. A new rid per retry threw
  // every answer away once answers took longer than the timeout, and 1024
  // subscribers asking five times a second kept them that slow.
  uint32_t query_rid_ = 0;
  uint32_t query_tries_ = 0;      // retries of the query in flight: each waits twice as long
  uint64_t query_deadline_ = 0;

  std::array<Request, 64> reqs_{};
  uint32_t n_reqs_ = 0;

  uint32_t snap_rid_ = 0;
  bool snap_sent_ = false;  // false in Mode::kSnapshot: the snapshot request is due
  bool snap_cleared_ = false;
  uint64_t snap_deadline_ = 0;

  std::vector<InstrumentRecovery> irecs_;

  // Where poll() encodes a request: large enough for a snapshot request that
  // names every instrument (snap_ids_ lists the filter's for it; none when
  // the filter is all instruments).
  std::unique_ptr<std::byte[]> frame_;
  size_t frame_bytes_ = 0;
  std::unique_ptr<uint32_t[]> snap_ids_;

  bool connected_ = false;
  bool subscribed_ = false;
  uint16_t publisher_features_ = 0;  // the SubscribeAck's, this connection's
  wire::LatencyReport latency_{};
  bool subscribe_refused_ = false;
  bool peer_failed_ = false;
  uint64_t peer_unproven_since_ = 0;
  uint32_t subscribe_rid_ = 0;
  uint32_t subscribe_acked_rid_ = 0;  // a repeated Subscribe is acknowledged twice: the second is ignored
  uint32_t subscribe_tries_ = 0;
  uint64_t subscribe_deadline_ = 0;
  uint64_t last_status_ = 0;
  uint32_t next_rid_ = 1;
  std::string last_error_;
  ClientAuth auth_;

  // subscriber_rails.cpp: a rail silent while the other delivers (a pair
  // member lost from this subscriber's view), and the time without new
  // data, both judged in poll() from what the live path stamps anyway.
  void watch_rails(uint64_t now) noexcept;
  // next_seq_ moved since the last look: closes the interval without data.
  void note_progress(uint64_t now) noexcept;
  uint64_t progress_seq_ = 1;   // next_seq_ at the last progress seen
  uint64_t progress_ns_ = 0;    // when (0: none yet this session, nothing to measure)
  bool progress_idle_ = false;  // since, a rail's heartbeat repeated a tail that is what was delivered
  std::array<uint64_t, 2> hb_tail_{UINT64_MAX, UINT64_MAX};  // each rail's last heartbeat's tail
  std::array<uint64_t, 2> rail_seen_{};  // rail_rx_ as watch_rails last saw it
  std::array<bool, 2> rail_silent_{};
  // The first interval without data that closed after the rail's last
  // datagram (rail_gap_known_): what its silence cost.
  std::array<uint64_t, 2> rail_gap_{};
  std::array<bool, 2> rail_gap_known_{};

  // The loss report (subscriber_losses.cpp): the gap open now (ordinal 0:
  // none recorded), and what the counters said when it opened, since how it
  // was recovered is what moved meanwhile.
  LossReport* losses_ = nullptr;
  LossRecord gap_rec_{};
  uint64_t gap_recovered0_ = 0, gap_snapshots0_ = 0, gap_rail_b0_ = 0;
  void open_loss(uint64_t now) noexcept;
  // how kOpen: judged from what moved since the gap opened.
  void close_loss(uint64_t now, LossHow how) noexcept;
  // From poll(): a gap that closed on a path that does not record it.
  void poll_loss(uint64_t now) noexcept;
};

}  // namespace mdcast::feed

// Subscriber<Handler>: exact, in-order delivery over an unreliable medium.
//
// Datagrams arrive through on_datagram() from one or two rails (A/B
// arbitration: the first copy of each sequence wins) and from retransmit
// replies. The engine delivers every message of its instrument filter exactly
// once and in order, or - when history is gone - replaces a range by a
// snapshot of the books, never a silent hole:
//
//   live      seq == next: deliver in place (zero-copy), then drain the window
//   gap       seq >  next: copy into the window, ask for the missing runs
//             (after `reorder_wait`), several requests in flight
//   snapshot  a gap too old or too large, retries exhausted, or the window
//             overflowed: ask for the books at some S, keep buffering, then
//             resume at S+1 from the window
//
// Per-instrument sequences back this up: an instrument whose sequence jumps,
// whose book refuses a message, or whose checksum disagrees with a heartbeat
// is recovered alone (a single-instrument snapshot, its messages held until
// it arrives) while the others keep flowing.
//
// Handler requirements (called on this thread, from within on_datagram /
// on_control_frame / poll; must not call back into the engine):
//   void on_message(const wire::Message&, const Delivery&) noexcept;
//   void on_snapshot(uint32_t instrument, const book::BookSet*) noexcept;  // book replaced
//   void on_reset(uint32_t new_session) noexcept;                          // every book cleared
// and optionally
//   void on_event(SubscriberEvent, std::string_view detail) noexcept;
//
// The data path (on_datagram in the live state) allocates nothing, throws
// nothing and makes no virtual call per message. Control requests are built
// on the recovery path only.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/control.hpp"
#include "mdcast/wire/datagram.hpp"

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
  kSessionEnded,      // the publisher announced a clean end of session
  kControlError,      // an error reply (detail has its text)
  kSessionChanged,
};

using media::ControlChannel;

template <class H>
concept SubscriberHandler = requires(H& h, const wire::Message& m, const Delivery& d, uint32_t u,
                                     const book::BookSet* b) {
  h.on_message(m, d);
  h.on_snapshot(u, b);
  h.on_reset(u);
};

template <SubscriberHandler Handler>
class Subscriber {
 public:
  Subscriber(const SubscriberConfig& cfg, Handler& handler, ControlChannel* control,
             SubscriberCounters* counters = nullptr);
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  void on_datagram(std::span<const std::byte> d, Rail rail, uint64_t now) noexcept;
  void on_control_frame(std::span<const std::byte> frame, uint64_t now) noexcept;
  void on_control_connected(uint64_t now) noexcept;
  void on_control_disconnected() noexcept {
    connected_ = false;
    subscribed_ = false;
  }
  void poll(uint64_t now) noexcept;

  // Changes the filter; new instruments are recovered by snapshot.
  void add_instruments(std::span<const uint32_t> ids, uint64_t now);
  void remove_instruments(std::span<const uint32_t> ids);

  [[nodiscard]] const SubscriberCounters& counters() const noexcept { return *counters_; }
  [[nodiscard]] const book::BookSet* books() const noexcept { return books_.get(); }
  [[nodiscard]] uint32_t session() const noexcept { return session_; }
  [[nodiscard]] uint64_t next_sequence() const noexcept { return next_seq_; }
  [[nodiscard]] uint64_t highest_sequence() const noexcept { return highest_seen_; }
  [[nodiscard]] bool subscribed() const noexcept { return subscribed_; }
  [[nodiscard]] bool session_ended() const noexcept { return session_ended_; }
  [[nodiscard]] bool in_snapshot() const noexcept { return mode_ == Mode::kSnapshot; }
  [[nodiscard]] bool recovering() const noexcept {
    return mode_ == Mode::kSnapshot || next_seq_ <= highest_seen_ || active_irecs() > 0;
  }
  // True once everything the publisher announced has been delivered.
  [[nodiscard]] bool caught_up() const noexcept { return session_ != 0 && !recovering(); }
  [[nodiscard]] bool wants(uint32_t inst) const noexcept { return inst < n_inst_ && filter_[inst]; }
  [[nodiscard]] uint32_t instrument_seq(uint32_t inst) const noexcept { return last_iseq_[inst]; }
  [[nodiscard]] size_t buffered() const noexcept;
  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }
  [[nodiscard]] bool subscribe_refused() const noexcept { return subscribe_refused_; }
  [[nodiscard]] const SubscriberConfig& config() const noexcept { return cfg_; }

 private:
  enum class Mode : uint8_t { kLive, kSnapshot };
  static constexpr uint8_t kNoRec = 0xff;
  struct Meta {
    uint64_t seq = 0;  // 0: empty
    uint64_t recv = 0;
    uint16_t len = 0;
  };
  struct Request {
    uint32_t rid;
    uint64_t from;
    uint32_t count;
    uint64_t deadline;
    uint32_t retries;
  };
  struct InstrumentRecovery {
    bool busy = false;
    bool sent = false;
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

  void event(SubscriberEvent e, std::string_view detail) noexcept {
    if constexpr (requires(Handler& h) { h.on_event(e, detail); }) handler_.on_event(e, detail);
  }

  bool accept_session(uint32_t s, uint64_t now) noexcept;
  void start_session(uint32_t s) noexcept;
  void handle_unsequenced(std::span<const std::byte> d, const wire::DatagramHeader& h, uint64_t now) noexcept;
  void store(std::span<const std::byte> d, uint64_t seq, Rail rail, uint64_t now) noexcept;
  void drain(uint64_t now) noexcept;
  void note_gap(uint64_t now) noexcept;
  void deliver(std::span<const std::byte> d, const wire::DatagramHeader& h, uint64_t received, uint64_t now,
               bool recovered) noexcept;
  void process(wire::MessageView v, const Delivery& dl, uint64_t now) noexcept;
  void hold(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept;
  void rail_first(Rail r) noexcept {
    if (r == Rail::kA) counters_->rail_a_first.add();
    else if (r == Rail::kB) counters_->rail_b_first.add();
  }
  [[nodiscard]] size_t slot_of(uint64_t seq) const noexcept { return seq % n_slots_; }
  [[nodiscard]] bool present(uint64_t seq) const noexcept { return meta_[slot_of(seq)].seq == seq; }
  [[nodiscard]] uint64_t window_base() const noexcept { return next_seq_ > floor_ ? next_seq_ : floor_; }

  void request_missing(uint64_t now) noexcept;
  void send_retransmit(Request& r, uint64_t now) noexcept;
  void enter_snapshot(uint64_t now) noexcept;
  void send_snapshot_request(uint64_t now) noexcept;
  void apply_snapshot_run(std::span<const std::byte> run, int irec) noexcept;
  void clear_filtered() noexcept;
  void finish_snapshot(uint64_t snap_seq, uint64_t now) noexcept;
  void start_irec(uint32_t inst, uint64_t now) noexcept;
  void send_irec(InstrumentRecovery& r, uint64_t now) noexcept;
  void finish_irec(int idx, uint64_t now) noexcept;
  void cancel_irecs() noexcept;
  [[nodiscard]] uint32_t active_irecs() const noexcept;
  void send_subscribe(uint64_t now) noexcept;
  void send_status(uint64_t now) noexcept;
  void send(const std::vector<std::byte>& f) noexcept {
    if (ctl_) (void)ctl_->send(f);
  }

  SubscriberConfig cfg_;
  Handler& handler_;
  ControlChannel* ctl_;
  std::unique_ptr<SubscriberCounters> owned_counters_;
  SubscriberCounters* counters_;
  std::unique_ptr<book::BookSet> books_;
  uint32_t n_inst_;
  std::unique_ptr<uint8_t[]> filter_;
  std::unique_ptr<uint32_t[]> last_iseq_;
  std::unique_ptr<uint8_t[]> irec_of_;
  Reassembler reasm_;

  // Window of out-of-order datagrams, indexed by sequence modulo n_slots_.
  size_t n_slots_;
  size_t slot_bytes_;
  std::unique_ptr<std::byte[]> window_;
  std::unique_ptr<Meta[]> meta_;
  uint64_t floor_ = 0;  // sequences below this were abandoned to a snapshot

  Mode mode_ = Mode::kLive;
  uint32_t session_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t highest_seen_ = 0;
  uint64_t gap_since_ = 0;
  bool gap_open_ = false;
  bool scan_needed_ = false;
  uint64_t last_rx_ = 0;
  bool publisher_silent_ = false;
  bool session_ended_ = false;

  std::array<Request, 64> reqs_{};
  uint32_t n_reqs_ = 0;

  uint32_t snap_rid_ = 0;
  bool snap_sent_ = false;
  bool snap_cleared_ = false;
  uint64_t snap_deadline_ = 0;

  std::vector<InstrumentRecovery> irecs_;

  bool connected_ = false;
  bool subscribed_ = false;
  bool subscribe_refused_ = false;
  uint32_t subscribe_rid_ = 0;
  uint64_t subscribe_deadline_ = 0;
  uint64_t last_status_ = 0;
  uint32_t next_rid_ = 1;
  std::string last_error_;
};

}  // namespace mdcast::feed

#include "mdcast/feed/subscriber_impl.hpp"

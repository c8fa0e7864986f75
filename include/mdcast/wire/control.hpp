// Control-plane frames: subscribe, retransmit, snapshot, status, error.
//
// They travel over a reliable byte stream or message channel (Unix socket for
// shm, TCP for UDP, RC queue pairs for verbs). Each frame starts with a 12-byte
// header: u32 length (total), u8 type, u8 version, u16 reserved, u32 request id
// (echoed in the reply). docs/protocol.md gives every body.
//
// This is control code: building frames allocates, except through the
// encoders into a caller's buffer (a subscriber's requests, sent from its
// control round without allocating); parsing is bounds-checked and never
// throws (hostile clients send anything).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mdcast/wire/datagram.hpp"

namespace mdcast::wire {

namespace ctl {
constexpr size_t kLength = 0;     // u32
constexpr size_t kType = 4;       // u8
constexpr size_t kVersion = 5;    // u8
// u16, reserved (0) in every frame but SubscribeAck, where it holds the
// publisher's features: what a subscriber may send it beyond version 2's
// first frames. Earlier publishers write 0 and earlier subscribers ignore it.
constexpr size_t kFeatures = 6;
constexpr size_t kRequestId = 8;  // u32
constexpr size_t kHeaderSize = 12;
constexpr size_t kMaxFrame = 4u << 20;  // larger frames are a protocol error
constexpr uint32_t kAll = 0xffffffffu;  // "all instruments" in a count field
}  // namespace ctl

enum class CtlType : uint8_t {
  kSubscribe = 1,
  kSubscribeAck = 2,
  kUnsubscribe = 3,
  kRetransmitRequest = 4,
  kRetransmitReply = 5,
  kSnapshotRequest = 6,
  kSnapshotData = 7,
  kSnapshotDone = 8,
  kStatusReport = 9,
  kError = 10,
  // Mutual authentication (wire/auth.hpp): hello, challenge, proof, before Subscribe.
  kAuthHello = 11,
  kAuthChallenge = 12,
  kAuthProof = 13,
  // The control plane confirms what a datagram claims (a new session, an end
  // of session, a far-ahead sequence) before a subscriber acts on it.
  kSessionQuery = 14,
  kSessionStatus = 15,
  // After a client's proof: the session's data key, wrapped for that client
  // (wire/auth.hpp). Datagrams of a feed with secrets carry tags made with it.
  kAuthDataKey = 16,
  // What a subscriber's application measured, sent only to a publisher whose
  // SubscribeAck lists kAcceptsLatency (earlier ones refuse unknown types).
  kLatencyReport = 17,
};

enum class RetransmitStatus : uint8_t { kOk = 0, kTooOld = 1, kNotYet = 2, kWrongSession = 3 };
enum class SnapshotStatus : uint8_t { kOk = 0, kNotEntitled = 1, kUnavailable = 2 };

enum class ErrorCode : uint16_t {
  kMalformed = 1,
  kNotSubscribed = 2,
  kNotEntitled = 3,
  kUnknownChannel = 4,
  kTooLarge = 5,
  kBadCredential = 6,
  kOverloaded = 7,
  kUnsupported = 8,
};

// An instrument set on the wire: either "all" or an explicit list.
struct InstrumentSet {
  bool all = true;
  std::vector<uint32_t> ids;
};

// No credential: secrets never travel. A feed with secrets admits a
// Subscribe only after the handshake of wire/auth.hpp.
struct Subscribe {
  uint16_t channel = 0;
  uint32_t sender_id = 0;
  InstrumentSet instruments;
};
struct SubscribeAck {
  // Feature bits (ctl::kFeatures): the publisher reads LatencyReport frames.
  static constexpr uint16_t kAcceptsLatency = 1;
  uint64_t session = 0;
  uint64_t last_seq = 0;
  uint64_t oldest_retransmit = 0;  // oldest sequence still in the retransmit ring (0: none)
  uint32_t granted = ctl::kAll;    // instruments granted, kAll for every instrument
  uint16_t features = 0;
};
struct Unsubscribe {
  InstrumentSet instruments;
};
struct RetransmitRequest {
  uint64_t session = 0;
  uint64_t from_seq = 0;
  uint32_t count = 0;
};
struct RetransmitReply {
  uint64_t session = 0;
  RetransmitStatus status = RetransmitStatus::kOk;
  uint64_t from_seq = 0;
  uint64_t oldest_available = 0;
  std::vector<std::span<const std::byte>> datagrams;  // views into the frame
};
struct SnapshotRequest {
  InstrumentSet instruments;  // all = everything the client subscribed to
};
struct SnapshotData {
  uint64_t session = 0;
  std::span<const std::byte> messages;  // a validated message run (definitions + chunks)
};
struct SnapshotDone {
  uint64_t session = 0;
  SnapshotStatus status = SnapshotStatus::kOk;
  uint32_t instrument_count = 0;
  uint64_t snapshot_seq = 0;
};
// What the publisher says of its session, asked when a datagram claims
// something a datagram alone must not decide: a new session, an end of
// session, a sequence far beyond what the subscriber knows.
struct SessionQuery {};
struct SessionStatus {
  uint64_t session = 0;
  uint64_t last_seq = 0;           // last sequence committed
  uint64_t oldest_retransmit = 0;  // oldest sequence still in the retransmit ring (0: none)
  bool ended = false;              // the session ended cleanly ...
  uint64_t end_seq = 0;            // ... after this sequence (0 unless ended)
};
struct StatusReport {
  uint64_t position = 0;   // next sequence the subscriber will deliver
  uint64_t lag = 0;        // datagrams seen but not yet delivered
  uint64_t drops = 0;      // datagrams lost before recovery, cumulative
  uint64_t capacity = 0;   // messages/s the subscriber can take (0: unknown)
};
// The application's one-way latency as it measured it (clocks are the
// application's: one host, or hosts whose clocks it trusts), so that the
// publisher's view of its subscribers can show it. Cumulative since the
// subscriber started; count 0: nothing measured.
struct LatencyReport {
  uint64_t count = 0;
  uint64_t p50_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
};
struct ErrorReply {
  ErrorCode code = ErrorCode::kMalformed;
  std::string text;
};

using ControlBody = std::variant<Subscribe, SubscribeAck, Unsubscribe, RetransmitRequest, RetransmitReply,
                                 SnapshotRequest, SnapshotData, SnapshotDone, StatusReport, ErrorReply, SessionQuery,
                                 SessionStatus, LatencyReport>;

struct ControlFrame {
  uint32_t request_id = 0;
  ControlBody body;
};

// Parses one complete frame. Returns nullopt with `why` set when the frame is
// malformed, or could not be parsed for lack of memory ("out of memory"):
// either way the caller drops it. Views inside the result point into `frame`.
[[nodiscard]] std::optional<ControlFrame> parse_control(std::span<const std::byte> frame, std::string* why) noexcept;
// The checks every frame's header passes (size, length field, version),
// shared by parse_control and parse_auth. May throw only for lack of memory
// while it writes `why` (the parsers catch that).
[[nodiscard]] bool check_frame_header(std::span<const std::byte> frame, std::string* why);

// The channel a connection's first frame names, for a control endpoint
// that serves several channels (media/stream/front_door.hpp). A subscriber's
// first frame is Subscribe or AuthHello; both carry the channel at byte 12.
// Reads the first kRouteBytes of the stream at most (the rest of the frame
// may not have arrived), and refuses as soon as a field in them is wrong
// (a bad length or type is known from 5 bytes); never throws, never allocates.
namespace ctl {
constexpr size_t kRouteBytes = 14;
}  // namespace ctl
struct FirstFrameRoute {
  enum class Kind : uint8_t { kNeedMore, kChannel, kBad };
  Kind kind = Kind::kNeedMore;
  uint16_t channel = 0;
  const char* why = "";  // kBad: what is wrong, for the Error the client is told
};
[[nodiscard]] FirstFrameRoute route_first_frame(std::span<const std::byte> head) noexcept;

// Wire channel ids (ascending) as an operator reads them: "3", "1 to 4",
// "1, 5, 9"; "none" for none. What a refusal for an unknown channel names.
[[nodiscard]] std::string format_channel_ids(std::span<const uint16_t> ids);

// Encoders into a caller's buffer: each writes one complete frame at the
// start of `out` and returns its length, or returns 0 (out left unspecified)
// when `out` is shorter than the frame. They never allocate and never throw:
// a subscriber builds its requests with them in its control round, in space
// it allocated at construction.
// A snapshot request whose set is a view (all, or `ids`), so that nothing is
// built to send one.
struct SnapshotRequestView {
  bool all = true;
  std::span<const uint32_t> ids;
};
namespace ctl {
// The bytes of a SnapshotRequest for n instrument ids (0 for all).
[[nodiscard]] constexpr size_t snapshot_request_size(size_t n) noexcept { return kHeaderSize + 4 + 4 * n; }
// Fits every fixed-size frame a subscriber sends (retransmit request, session
// query, status and latency reports) and a snapshot request for one instrument.
constexpr size_t kSmallFrame = 64;
}  // namespace ctl
size_t encode_control(uint32_t request_id, const RetransmitRequest& b, std::span<std::byte> out) noexcept;
size_t encode_control(uint32_t request_id, const SnapshotRequestView& b, std::span<std::byte> out) noexcept;
size_t encode_control(uint32_t request_id, const SessionQuery& b, std::span<std::byte> out) noexcept;
size_t encode_control(uint32_t request_id, const StatusReport& b, std::span<std::byte> out) noexcept;
size_t encode_control(uint32_t request_id, const LatencyReport& b, std::span<std::byte> out) noexcept;

// Encoders: each returns one complete frame.
std::vector<std::byte> encode_control(uint32_t request_id, const Subscribe& b);
std::vector<std::byte> encode_control(uint32_t request_id, const SubscribeAck& b);
std::vector<std::byte> encode_control(uint32_t request_id, const Unsubscribe& b);
std::vector<std::byte> encode_control(uint32_t request_id, const RetransmitRequest& b);
std::vector<std::byte> encode_control(uint32_t request_id, const SnapshotRequest& b);
std::vector<std::byte> encode_control(uint32_t request_id, const SnapshotDone& b);
std::vector<std::byte> encode_control(uint32_t request_id, const StatusReport& b);
std::vector<std::byte> encode_control(uint32_t request_id, const LatencyReport& b);
std::vector<std::byte> encode_control(uint32_t request_id, const SessionQuery& b);
std::vector<std::byte> encode_control(uint32_t request_id, const SessionStatus& b);
std::vector<std::byte> encode_control(uint32_t request_id, const ErrorReply& b);
// Large replies are built in place by these builders (no per-datagram vectors).
class RetransmitReplyBuilder {
 public:
  RetransmitReplyBuilder(uint32_t request_id, uint64_t session, RetransmitStatus status, uint64_t from_seq,
                         uint64_t oldest_available);
  // Appends a datagram; false if it would exceed `max_frame` (the caller stops there).
  bool add(std::span<const std::byte> datagram, size_t max_frame = ctl::kMaxFrame);
  std::vector<std::byte> finish() &&;
  [[nodiscard]] uint32_t count() const noexcept { return count_; }

 private:
  std::vector<std::byte> buf_;
  uint32_t count_ = 0;
};
class SnapshotDataBuilder {
 public:
  SnapshotDataBuilder(uint32_t request_id, uint64_t session);
  // Reserves `len` bytes for one message and returns where to write it.
  std::byte* reserve(size_t len);
  [[nodiscard]] size_t size() const noexcept { return buf_.size(); }
  [[nodiscard]] bool empty() const noexcept { return buf_.size() == kBodyStart; }
  std::vector<std::byte> finish() &&;

 private:
  static constexpr size_t kBodyStart = ctl::kHeaderSize + 8;
  std::vector<std::byte> buf_;
};

// Reassembles frames from a byte stream (TCP, Unix stream sockets, RC).
//
// Memory follows what is buffered, not what once was: a drained buffer whose
// capacity passed kRetainBytes is released, and compaction shrinks a buffer
// that a large frame had grown, so one 4 MiB frame (or a hostile prefix) does
// not pin 4 MiB per connection for the rest of its life. A length prefix over
// max_frame is reported as kBadFrame as soon as its 4 bytes are in, before the
// frame's body is waited for.
class FrameAssembler {
 public:
  enum class Status { kFrame, kNeedMore, kBadFrame };
  // Capacity kept across drains; above it the buffer is given back.
  static constexpr size_t kRetainBytes = 16u << 10;
  explicit FrameAssembler(size_t max_frame = ctl::kMaxFrame) : max_frame_(max_frame) {}
  void append(std::span<const std::byte> bytes) { buf_.insert(buf_.end(), bytes.begin(), bytes.end()); }
  // On kFrame, `frame` views the next frame, valid until the next call (or append).
  Status next(std::span<const std::byte>& frame);
  // What next() would answer, without taking the frame.
  [[nodiscard]] Status peek() const noexcept;
  // The next frame's length prefix, 0 while fewer than 4 bytes are buffered.
  [[nodiscard]] size_t declared_length() const noexcept;
  [[nodiscard]] size_t buffered() const noexcept { return buf_.size() - consumed_; }
  // Bytes of memory held (for accounting and tests).
  [[nodiscard]] size_t capacity() const noexcept { return buf_.capacity(); }
  [[nodiscard]] size_t max_frame() const noexcept { return max_frame_; }
  // Applies to the next frame on (a transport admits a client to larger frames).
  void set_max_frame(size_t max_frame) noexcept { max_frame_ = max_frame; }
  // Drops everything buffered and gives the memory back.
  void clear() noexcept {
    std::vector<std::byte>().swap(buf_);
    consumed_ = 0;
  }

 private:
  std::vector<std::byte> buf_;
  size_t consumed_ = 0;
  size_t max_frame_;
};

[[nodiscard]] std::string_view to_string(CtlType t) noexcept;
[[nodiscard]] std::string_view to_string(ErrorCode c) noexcept;
[[nodiscard]] std::string_view to_string(RetransmitStatus s) noexcept;

}  // namespace mdcast::wire

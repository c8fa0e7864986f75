#include "mdcast/wire/control.hpp"

#include <fmt/format.h>

#include <cstring>

#include "mdcast/wire/auth.hpp"

namespace mdcast::wire {
namespace {

// Subscribe
constexpr size_t kSubChannel = 12, kSubReserved = 14, kSubSender = 16, kSubCount = 20, kSubIds = 24;
// SubscribeAck
constexpr size_t kAckSession = 12, kAckLastSeq = 20, kAckOldest = 28, kAckGranted = 36, kAckSize = 40;
// Unsubscribe / SnapshotRequest
constexpr size_t kSetCount = 12, kSetIds = 16;
// RetransmitRequest
constexpr size_t kRtxSession = 12, kRtxFrom = 20, kRtxCount = 28, kRtxSize = 32;
// RetransmitReply
constexpr size_t kRrSession = 12, kRrStatus = 20, kRrCount = 24, kRrFrom = 28, kRrOldest = 36, kRrData = 44;
// SnapshotData
constexpr size_t kSdSession = 12, kSdMessages = 20;
// SnapshotDone
constexpr size_t kSnSession = 12, kSnStatus = 20, kSnInstruments = 24, kSnSeq = 28, kSnSize = 36;
// SessionQuery: the header alone. SessionStatus:
constexpr size_t kSsSession = 12, kSsLastSeq = 20, kSsOldest = 28, kSsFlags = 36, kSsEndSeq = 40, kSsSize = 48;
// StatusReport
constexpr size_t kStPosition = 12, kStLag = 20, kStDrops = 28, kStCapacity = 36, kStSize = 44;
// LatencyReport
constexpr size_t kLrCount = 12, kLrP50 = 20, kLrP99 = 28, kLrMax = 36, kLrSize = 44;
// Error
constexpr size_t kErrCode = 12, kErrLen = 14, kErrText = 16;

static_assert(ctl::kSmallFrame >= kRtxSize && ctl::kSmallFrame >= kStSize && ctl::kSmallFrame >= kLrSize &&
                  ctl::kSmallFrame >= ctl::snapshot_request_size(1),
              "kSmallFrame holds every small request a subscriber sends");

constexpr size_t kMaxSetIds = 1u << 20;  // bounds a hostile instrument list
constexpr size_t kMaxErrorText = 1024;

void put_header(std::byte* f, CtlType t, uint32_t request_id, size_t size) noexcept {
  store_le<uint32_t>(f + ctl::kLength, static_cast<uint32_t>(size));
  store_le<uint8_t>(f + ctl::kType, static_cast<uint8_t>(t));
  store_le<uint8_t>(f + ctl::kVersion, kVersion);
  store_le<uint16_t>(f + 6, 0);
  store_le<uint32_t>(f + ctl::kRequestId, request_id);
}

std::vector<std::byte> frame(CtlType t, uint32_t request_id, size_t body_size) {
  std::vector<std::byte> f(ctl::kHeaderSize + body_size);
  put_header(f.data(), t, request_id, f.size());
  return f;
}

// The header of a frame of `size` bytes into `out`; false when it does not fit.
bool frame_into(std::span<std::byte> out, CtlType t, uint32_t request_id, size_t size) noexcept {
  if (out.size() < size) return false;
  put_header(out.data(), t, request_id, size);
  return true;
}

// A frame built by one of the encoders into a buffer, as a vector.
template <class Body>
std::vector<std::byte> to_vector(uint32_t rid, const Body& b, size_t size) {
  std::vector<std::byte> f(size);
  (void)encode_control(rid, b, std::span<std::byte>(f));
  return f;
}

void put_set(std::byte* p, bool all, std::span<const uint32_t> ids) noexcept {
  if (all) {
    store_le<uint32_t>(p, ctl::kAll);
    return;
  }
  store_le<uint32_t>(p, static_cast<uint32_t>(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) store_le<uint32_t>(p + 4 + 4 * i, ids[i]);
}
void put_set(std::byte* p, const InstrumentSet& s) noexcept { put_set(p, s.all, s.ids); }
size_t set_size(const InstrumentSet& s) { return 4 + (s.all ? 0 : 4 * s.ids.size()); }

// Reads a set whose count is at `count_off` and ids follow at `ids_off`.
bool get_set(std::span<const std::byte> f, size_t count_off, size_t ids_off, InstrumentSet& out, std::string* why) {
  auto bad = [why](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  const auto n = load_le<uint32_t>(f.data() + count_off);
  if (n == ctl::kAll) {
    out.all = true;
    return f.size() == ids_off ? true : bad("trailing bytes after 'all' instrument set");
  }
  if (n > kMaxSetIds) return bad(fmt::format("instrument list of {} exceeds {}", n, kMaxSetIds));
  if (f.size() != ids_off + size_t{n} * 4)
    return bad(fmt::format("instrument list of {} does not match frame length {}", n, f.size()));
  out.all = false;
  out.ids.resize(n);
  for (size_t i = 0; i < n; ++i) out.ids[i] = load_le<uint32_t>(f.data() + ids_off + 4 * i);
  return true;
}

bool need(std::span<const std::byte> f, size_t n, std::string* why, std::string_view what) {
  if (f.size() >= n) return true;
  if (why) *why = fmt::format("{} frame of {} bytes is shorter than its {}-byte body", what, f.size(), n);
  return false;
}
bool exact(std::span<const std::byte> f, size_t n, std::string* why, std::string_view what) {
  if (f.size() == n) return true;
  if (why) *why = fmt::format("{} frame is {} bytes, expected {}", what, f.size(), n);
  return false;
}

}  // namespace

bool check_frame_header(std::span<const std::byte> f, std::string* why) {
  if (f.size() < ctl::kHeaderSize) {
    if (why) *why = fmt::format("frame of {} bytes is shorter than the 12-byte header", f.size());
    return false;
  }
  const auto len = load_le<uint32_t>(f.data() + ctl::kLength);
  if (len != f.size()) {
    if (why) *why = fmt::format("frame length field {} disagrees with {} bytes", len, f.size());
    return false;
  }
  if (load_le<uint8_t>(f.data() + ctl::kVersion) != kVersion) {
    if (why) *why = fmt::format("unsupported control version {}", load_le<uint8_t>(f.data() + ctl::kVersion));
    return false;
  }
  return true;
}

FirstFrameRoute route_first_frame(std::span<const std::byte> f) noexcept {
  using Kind = FirstFrameRoute::Kind;
  // Each field is judged as soon as it is in, so a client whose header alone
  // is wrong hears why at once rather than at the timeout.
  if (f.size() >= 4) {
    const auto len = load_le<uint32_t>(f.data() + ctl::kLength);
    if (len < ctl::kRouteBytes) return {Kind::kBad, 0, "a first frame too short to name a channel"};
    if (len > ctl::kMaxFrame) return {Kind::kBad, 0, "the first frame's length is beyond any control frame's"};
  }
  if (f.size() >= 5) {
    const auto type = static_cast<CtlType>(load_le<uint8_t>(f.data() + ctl::kType));
    if (type != CtlType::kSubscribe && type != CtlType::kAuthHello)
      return {Kind::kBad, 0,
              "the first frame on a control connection must be Subscribe or AuthHello, which name the channel"};
    const auto len = load_le<uint32_t>(f.data() + ctl::kLength);
    static_assert(auth::kHelloChannel == kSubChannel, "AuthHello keeps its channel where Subscribe does");
    if (type == CtlType::kSubscribe && len < kSubIds) return {Kind::kBad, 0, "a Subscribe shorter than its fixed fields"};
    if (type == CtlType::kAuthHello && len < auth::kHelloIdentity)
      return {Kind::kBad, 0, "an AuthHello shorter than its fixed fields"};
  }
  if (f.size() >= 6) {
    static_assert(kVersion == 2, "the text below names the version");
    if (load_le<uint8_t>(f.data() + ctl::kVersion) != kVersion)
      return {Kind::kBad, 0, "unsupported control protocol version (this publisher speaks version 2)"};
  }
  if (f.size() < ctl::kRouteBytes) return {};
  return {Kind::kChannel, load_le<uint16_t>(f.data() + kSubChannel), ""};
}

std::optional<ControlFrame> parse_control(std::span<const std::byte> f, std::string* why) noexcept {
  try {
    if (!check_frame_header(f, why)) return std::nullopt;
    ControlFrame out;
    out.request_id = load_le<uint32_t>(f.data() + ctl::kRequestId);
    const auto type = static_cast<CtlType>(load_le<uint8_t>(f.data() + ctl::kType));
    const std::byte* p = f.data();
    switch (type) {
      case CtlType::kSubscribe: {
        if (!need(f, kSubIds, why, "subscribe")) return std::nullopt;
        Subscribe s;
        s.channel = load_le<uint16_t>(p + kSubChannel);
        s.sender_id = load_le<uint32_t>(p + kSubSender);
        // Where a credential's length once was: a client that still sends
        // one must hear why it is refused (its secret travelled).
        if (const auto legacy = load_le<uint16_t>(p + kSubReserved); legacy != 0) {
          if (why)
            *why = fmt::format("subscribe carries a {}-byte credential: credentials no longer travel; upgrade the "
                               "subscriber and give it subscriber.identity and subscriber.secret_file",
                               legacy);
          return std::nullopt;
        }
        if (!get_set(f, kSubCount, kSubIds, s.instruments, why)) return std::nullopt;
        out.body = std::move(s);
        break;
      }
      case CtlType::kSubscribeAck: {
        if (!exact(f, kAckSize, why, "subscribe-ack")) return std::nullopt;
        out.body = SubscribeAck{load_le<uint64_t>(p + kAckSession), load_le<uint64_t>(p + kAckLastSeq),
                                load_le<uint64_t>(p + kAckOldest), load_le<uint32_t>(p + kAckGranted),
                                load_le<uint16_t>(p + ctl::kFeatures)};
        break;
      }
      case CtlType::kUnsubscribe:
      case CtlType::kSnapshotRequest: {
        if (!need(f, kSetIds, why, to_string(type))) return std::nullopt;
        InstrumentSet s;
        if (!get_set(f, kSetCount, kSetIds, s, why)) return std::nullopt;
        if (type == CtlType::kUnsubscribe)
          out.body = Unsubscribe{std::move(s)};
        else
          out.body = SnapshotRequest{std::move(s)};
        break;
      }
      case CtlType::kRetransmitRequest: {
        if (!exact(f, kRtxSize, why, "retransmit-request")) return std::nullopt;
        out.body = RetransmitRequest{load_le<uint64_t>(p + kRtxSession), load_le<uint64_t>(p + kRtxFrom),
                                     load_le<uint32_t>(p + kRtxCount)};
        break;
      }
      case CtlType::kRetransmitReply: {
        if (!need(f, kRrData, why, "retransmit-reply")) return std::nullopt;
        RetransmitReply r;
        r.session = load_le<uint64_t>(p + kRrSession);
        const auto st = load_le<uint8_t>(p + kRrStatus);
        if (st > static_cast<uint8_t>(RetransmitStatus::kWrongSession)) {
          if (why) *why = fmt::format("retransmit status {} unknown", st);
          return std::nullopt;
        }
        r.status = static_cast<RetransmitStatus>(st);
        r.from_seq = load_le<uint64_t>(p + kRrFrom);
        r.oldest_available = load_le<uint64_t>(p + kRrOldest);
        const auto n = load_le<uint32_t>(p + kRrCount);
        size_t off = kRrData;
        if (n > f.size() / 2) {
          if (why) *why = fmt::format("retransmit reply claims {} datagrams in {} bytes", n, f.size());
          return std::nullopt;
        }
        r.datagrams.reserve(n);
        for (uint32_t i = 0; i < n; ++i) {
          if (f.size() - off < 2) {
            if (why) *why = "retransmit reply truncated in a datagram length";
            return std::nullopt;
          }
          const auto dl = load_le<uint16_t>(p + off);
          off += 2;
          if (f.size() - off < dl) {
            if (why) *why = "retransmit reply truncated in a datagram";
            return std::nullopt;
          }
          r.datagrams.emplace_back(p + off, dl);
          off += dl;
        }
        if (off != f.size()) {
          if (why) *why = "trailing bytes after retransmitted datagrams";
          return std::nullopt;
        }
        out.body = std::move(r);
        break;
      }
      case CtlType::kSnapshotData: {
        if (!need(f, kSdMessages, why, "snapshot-data")) return std::nullopt;
        const auto run = f.subspan(kSdMessages);
        if (validate_message_run(run.data(), run.size()) < 0) {
          if (why) *why = "snapshot data holds a malformed message";
          return std::nullopt;
        }
        out.body = SnapshotData{load_le<uint64_t>(p + kSdSession), run};
        break;
      }
      case CtlType::kSnapshotDone: {
        if (!exact(f, kSnSize, why, "snapshot-done")) return std::nullopt;
        const auto st = load_le<uint8_t>(p + kSnStatus);
        if (st > static_cast<uint8_t>(SnapshotStatus::kUnavailable)) {
          if (why) *why = fmt::format("snapshot status {} unknown", st);
          return std::nullopt;
        }
        out.body = SnapshotDone{load_le<uint64_t>(p + kSnSession), static_cast<SnapshotStatus>(st),
                                load_le<uint32_t>(p + kSnInstruments), load_le<uint64_t>(p + kSnSeq)};
        break;
      }
      case CtlType::kSessionQuery: {
        if (!exact(f, ctl::kHeaderSize, why, "session-query")) return std::nullopt;
        out.body = SessionQuery{};
        break;
      }
      case CtlType::kSessionStatus: {
        if (!exact(f, kSsSize, why, "session-status")) return std::nullopt;
        const auto fl = load_le<uint8_t>(p + kSsFlags);
        if (fl & ~uint8_t{1}) {
          if (why) *why = fmt::format("session status flags {:#x} unknown", fl);
          return std::nullopt;
        }
        out.body = SessionStatus{load_le<uint64_t>(p + kSsSession), load_le<uint64_t>(p + kSsLastSeq),
                                 load_le<uint64_t>(p + kSsOldest), (fl & 1) != 0, load_le<uint64_t>(p + kSsEndSeq)};
        break;
      }
      case CtlType::kStatusReport: {
        if (!exact(f, kStSize, why, "status-report")) return std::nullopt;
        out.body = StatusReport{load_le<uint64_t>(p + kStPosition), load_le<uint64_t>(p + kStLag),
                                load_le<uint64_t>(p + kStDrops), load_le<uint64_t>(p + kStCapacity)};
        break;
      }
      case CtlType::kLatencyReport: {
        if (!exact(f, kLrSize, why, "latency-report")) return std::nullopt;
        out.body = LatencyReport{load_le<uint64_t>(p + kLrCount), load_le<uint64_t>(p + kLrP50),
                                 load_le<uint64_t>(p + kLrP99), load_le<uint64_t>(p + kLrMax)};
        break;
      }
      case CtlType::kError: {
        if (!need(f, kErrText, why, "error")) return std::nullopt;
        const auto tl = load_le<uint16_t>(p + kErrLen);
        if (tl > kMaxErrorText || !exact(f, kErrText + tl, why, "error")) {
          if (why && tl > kMaxErrorText) *why = "error text too long";
          return std::nullopt;
        }
        out.body = ErrorReply{static_cast<ErrorCode>(load_le<uint16_t>(p + kErrCode)),
                              std::string(reinterpret_cast<const char*>(p + kErrText), tl)};
        break;
      }
      default:
        if (why) *why = fmt::format("unknown control frame type {}", static_cast<int>(type));
        return std::nullopt;
    }
    return out;
  } catch (...) {
    // Out of memory building the result or the reason. Only this handler may
    // not throw again (the function is noexcept): the short text fits the
    // string's own buffer, and is dropped if even that fails.
    if (why) {
      try {
        *why = "out of memory";
      } catch (...) {
      }
    }
    return std::nullopt;
  }
}

std::vector<std::byte> encode_control(uint32_t rid, const Subscribe& b) {
  auto f = frame(CtlType::kSubscribe, rid, kSubCount - ctl::kHeaderSize + set_size(b.instruments));
  store_le<uint16_t>(f.data() + kSubChannel, b.channel);
  store_le<uint16_t>(f.data() + kSubReserved, 0);
  store_le<uint32_t>(f.data() + kSubSender, b.sender_id);
  put_set(f.data() + kSubCount, b.instruments);
  return f;
}

std::vector<std::byte> encode_control(uint32_t rid, const SubscribeAck& b) {
  auto f = frame(CtlType::kSubscribeAck, rid, kAckSize - ctl::kHeaderSize);
  store_le<uint64_t>(f.data() + kAckSession, b.session);
  store_le<uint64_t>(f.data() + kAckLastSeq, b.last_seq);
  store_le<uint64_t>(f.data() + kAckOldest, b.oldest_retransmit);
  store_le<uint32_t>(f.data() + kAckGranted, b.granted);
  store_le<uint16_t>(f.data() + ctl::kFeatures, b.features);
  return f;
}

std::vector<std::byte> encode_control(uint32_t rid, const Unsubscribe& b) {
  auto f = frame(CtlType::kUnsubscribe, rid, set_size(b.instruments));
  put_set(f.data() + kSetCount, b.instruments);
  return f;
}

size_t encode_control(uint32_t rid, const SnapshotRequestView& b, std::span<std::byte> out) noexcept {
  const size_t size = ctl::snapshot_request_size(b.all ? 0 : b.ids.size());
  if (!frame_into(out, CtlType::kSnapshotRequest, rid, size)) return 0;
  put_set(out.data() + kSetCount, b.all, b.ids);
  return size;
}

std::vector<std::byte> encode_control(uint32_t rid, const SnapshotRequest& b) {
  const SnapshotRequestView v{b.instruments.all, b.instruments.ids};
  return to_vector(rid, v, ctl::snapshot_request_size(v.all ? 0 : v.ids.size()));
}

size_t encode_control(uint32_t rid, const RetransmitRequest& b, std::span<std::byte> out) noexcept {
  if (!frame_into(out, CtlType::kRetransmitRequest, rid, kRtxSize)) return 0;
  store_le<uint64_t>(out.data() + kRtxSession, b.session);
  store_le<uint64_t>(out.data() + kRtxFrom, b.from_seq);
  store_le<uint32_t>(out.data() + kRtxCount, b.count);
  return kRtxSize;
}

std::vector<std::byte> encode_control(uint32_t rid, const RetransmitRequest& b) { return to_vector(rid, b, kRtxSize); }

std::vector<std::byte> encode_control(uint32_t rid, const SnapshotDone& b) {
  auto f = frame(CtlType::kSnapshotDone, rid, kSnSize - ctl::kHeaderSize);
  store_le<uint64_t>(f.data() + kSnSession, b.session);
  store_le<uint8_t>(f.data() + kSnStatus, static_cast<uint8_t>(b.status));
  store_le<uint32_t>(f.data() + kSnInstruments, b.instrument_count);
  store_le<uint64_t>(f.data() + kSnSeq, b.snapshot_seq);
  return f;
}

size_t encode_control(uint32_t rid, const SessionQuery&, std::span<std::byte> out) noexcept {
  return frame_into(out, CtlType::kSessionQuery, rid, ctl::kHeaderSize) ? ctl::kHeaderSize : 0;
}

std::vector<std::byte> encode_control(uint32_t rid, const SessionQuery& b) {
  return to_vector(rid, b, ctl::kHeaderSize);
}

std::vector<std::byte> encode_control(uint32_t rid, const SessionStatus& b) {
  auto f = frame(CtlType::kSessionStatus, rid, kSsSize - ctl::kHeaderSize);
  store_le<uint64_t>(f.data() + kSsSession, b.session);
  store_le<uint64_t>(f.data() + kSsLastSeq, b.last_seq);
  store_le<uint64_t>(f.data() + kSsOldest, b.oldest_retransmit);
  store_le<uint8_t>(f.data() + kSsFlags, b.ended ? 1 : 0);
  std::memset(f.data() + kSsFlags + 1, 0, 3);
  store_le<uint64_t>(f.data() + kSsEndSeq, b.ended ? b.end_seq : 0);
  return f;
}

size_t encode_control(uint32_t rid, const StatusReport& b, std::span<std::byte> out) noexcept {
  if (!frame_into(out, CtlType::kStatusReport, rid, kStSize)) return 0;
  store_le<uint64_t>(out.data() + kStPosition, b.position);
  store_le<uint64_t>(out.data() + kStLag, b.lag);
  store_le<uint64_t>(out.data() + kStDrops, b.drops);
  store_le<uint64_t>(out.data() + kStCapacity, b.capacity);
  return kStSize;
}

std::vector<std::byte> encode_control(uint32_t rid, const StatusReport& b) { return to_vector(rid, b, kStSize); }

size_t encode_control(uint32_t rid, const LatencyReport& b, std::span<std::byte> out) noexcept {
  if (!frame_into(out, CtlType::kLatencyReport, rid, kLrSize)) return 0;
  store_le<uint64_t>(out.data() + kLrCount, b.count);
  store_le<uint64_t>(out.data() + kLrP50, b.p50_ns);
  store_le<uint64_t>(out.data() + kLrP99, b.p99_ns);
  store_le<uint64_t>(out.data() + kLrMax, b.max_ns);
  return kLrSize;
}

std::vector<std::byte> encode_control(uint32_t rid, const LatencyReport& b) { return to_vector(rid, b, kLrSize); }

std::vector<std::byte> encode_control(uint32_t rid, const ErrorReply& b) {
  const size_t tl = std::min(b.text.size(), kMaxErrorText);
  auto f = frame(CtlType::kError, rid, kErrText - ctl::kHeaderSize + tl);
  store_le<uint16_t>(f.data() + kErrCode, static_cast<uint16_t>(b.code));
  store_le<uint16_t>(f.data() + kErrLen, static_cast<uint16_t>(tl));
  std::memcpy(f.data() + kErrText, b.text.data(), tl);
  return f;
}

RetransmitReplyBuilder::RetransmitReplyBuilder(uint32_t rid, uint64_t session, RetransmitStatus status,
                                               uint64_t from_seq, uint64_t oldest_available)
    : buf_(frame(CtlType::kRetransmitReply, rid, kRrData - ctl::kHeaderSize)) {
  store_le<uint64_t>(buf_.data() + kRrSession, session);
  store_le<uint8_t>(buf_.data() + kRrStatus, static_cast<uint8_t>(status));
  std::memset(buf_.data() + kRrStatus + 1, 0, 3);
  store_le<uint64_t>(buf_.data() + kRrFrom, from_seq);
  store_le<uint64_t>(buf_.data() + kRrOldest, oldest_available);
}

bool RetransmitReplyBuilder::add(std::span<const std::byte> d, size_t max_frame) {
  if (buf_.size() + 2 + d.size() > max_frame) return false;
  const size_t at = buf_.size();
  buf_.resize(at + 2 + d.size());
  store_le<uint16_t>(buf_.data() + at, static_cast<uint16_t>(d.size()));
  if (!d.empty()) std::memcpy(buf_.data() + at + 2, d.data(), d.size());  // null data() when empty
  ++count_;
  return true;
}

std::vector<std::byte> RetransmitReplyBuilder::finish() && {
  store_le<uint32_t>(buf_.data() + kRrCount, count_);
  store_le<uint32_t>(buf_.data() + ctl::kLength, static_cast<uint32_t>(buf_.size()));
  return std::move(buf_);
}

SnapshotDataBuilder::SnapshotDataBuilder(uint32_t rid, uint64_t session)
    : buf_(frame(CtlType::kSnapshotData, rid, kSdMessages - ctl::kHeaderSize)) {
  store_le<uint64_t>(buf_.data() + kSdSession, session);
}

std::byte* SnapshotDataBuilder::reserve(size_t len) {
  const size_t at = buf_.size();
  buf_.resize(at + len);
  return buf_.data() + at;
}

std::vector<std::byte> SnapshotDataBuilder::finish() && {
  store_le<uint32_t>(buf_.data() + ctl::kLength, static_cast<uint32_t>(buf_.size()));
  return std::move(buf_);
}

FrameAssembler::Status FrameAssembler::next(std::span<const std::byte>& out) {
  if (consumed_ > 0 && consumed_ == buf_.size()) {
    // Drained (the caller is done with the last view): keep a small buffer
    // for the next frames, give a large one back.
    if (buf_.capacity() > kRetainBytes) std::vector<std::byte>().swap(buf_);
    else buf_.clear();
    consumed_ = 0;
  } else if (consumed_ > 0 && consumed_ * 2 >= buf_.size()) {
    // Compact lazily so a stream of small frames does not memmove per frame;
    // a buffer a large frame left behind shrinks to what it still holds.
    const size_t rest = buf_.size() - consumed_;
    if (buf_.capacity() > kRetainBytes && rest * 4 <= buf_.capacity()) {
      std::vector<std::byte> smaller(buf_.begin() + static_cast<ptrdiff_t>(consumed_), buf_.end());
      buf_.swap(smaller);
    } else {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(consumed_));
    }
    consumed_ = 0;
  }
  const Status st = peek();
  if (st != Status::kFrame) return st;
  const size_t len = declared_length();
  out = {buf_.data() + consumed_, len};
  consumed_ += len;
  return Status::kFrame;
}

size_t FrameAssembler::declared_length() const noexcept {
  if (buf_.size() - consumed_ < 4) return 0;
  return load_le<uint32_t>(buf_.data() + consumed_);
}

FrameAssembler::Status FrameAssembler::peek() const noexcept {
  const size_t avail = buf_.size() - consumed_;
  if (avail < 4) return Status::kNeedMore;
  const size_t len = declared_length();
  if (len < ctl::kHeaderSize || len > max_frame_) return Status::kBadFrame;
  return avail < len ? Status::kNeedMore : Status::kFrame;
}

std::string_view to_string(CtlType t) noexcept {
  switch (t) {
    case CtlType::kSubscribe: return "subscribe";
    case CtlType::kSubscribeAck: return "subscribe-ack";
    case CtlType::kUnsubscribe: return "unsubscribe";
    case CtlType::kRetransmitRequest: return "retransmit-request";
    case CtlType::kRetransmitReply: return "retransmit-reply";
    case CtlType::kSnapshotRequest: return "snapshot-request";
    case CtlType::kSnapshotData: return "snapshot-data";
    case CtlType::kSnapshotDone: return "snapshot-done";
    case CtlType::kStatusReport: return "status-report";
    case CtlType::kError: return "error";
    case CtlType::kAuthHello: return "auth-hello";
    case CtlType::kAuthChallenge: return "auth-challenge";
    case CtlType::kAuthProof: return "auth-proof";
    case CtlType::kSessionQuery: return "session-query";
    case CtlType::kSessionStatus: return "session-status";
    case CtlType::kAuthDataKey: return "auth-data-key";
    case CtlType::kLatencyReport: return "latency-report";
  }
  return "unknown";
}

std::string_view to_string(ErrorCode c) noexcept {
  switch (c) {
    case ErrorCode::kMalformed: return "malformed";
    case ErrorCode::kNotSubscribed: return "not-subscribed";
    case ErrorCode::kNotEntitled: return "not-entitled";
    case ErrorCode::kUnknownChannel: return "unknown-channel";
    case ErrorCode::kTooLarge: return "too-large";
    case ErrorCode::kBadCredential: return "bad-credential";
    case ErrorCode::kOverloaded: return "overloaded";
    case ErrorCode::kUnsupported: return "unsupported";
  }
  return "unknown";
}

std::string_view to_string(RetransmitStatus s) noexcept {
  switch (s) {
    case RetransmitStatus::kOk: return "ok";
    case RetransmitStatus::kTooOld: return "too-old";
    case RetransmitStatus::kNotYet: return "not-yet";
    case RetransmitStatus::kWrongSession: return "wrong-session";
  }
  return "unknown";
}

std::string format_channel_ids(std::span<const uint16_t> ids) {
  if (ids.empty()) return "none";
  const uint16_t lo = ids.front(), hi = ids.back();
  if (static_cast<size_t>(hi - lo) + 1 == ids.size()) return lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi);
  std::string s;
  for (const uint16_t id : ids) s += (s.empty() ? "" : ", ") + std::to_string(id);
  return s;
}

}  // namespace mdcast::wire

// Garbage on the control socket: random bytes, lengths out of range, unknown
// and reserved types, bodies that lie about their own sizes, truncated
// frames, frames only a publisher should send. Each case runs on its own
// connection; its outcome is what the publisher did first: an error reply,
// closing the connection, another answer, or nothing at all ("silent", which
// is what the threat model forbids).
#include <fmt/format.h>
#include <sys/socket.h>

#include <random>

#include "attack.hpp"

namespace mdcast::attack {
namespace {

using Bytes = std::vector<std::byte>;

struct Case {
  std::string name;
  bool subscribe_first = false;
  Bytes bytes;
  bool shut_write = false;  // half-close after sending: the publisher sees end of stream
};

Bytes header(uint32_t length, uint8_t type, uint8_t version = 1, uint32_t rid = 99) {
  Bytes h(wire::ctl::kHeaderSize);
  store_le<uint32_t>(h.data() + wire::ctl::kLength, length);
  store_le<uint8_t>(h.data() + wire::ctl::kType, type);
  store_le<uint8_t>(h.data() + wire::ctl::kVersion, version);
  store_le<uint32_t>(h.data() + wire::ctl::kRequestId, rid);
  return h;
}

void append(Bytes& to, const Bytes& b) { to.insert(to.end(), b.begin(), b.end()); }

// A valid frame whose length field is cut to `keep` bytes (and so are its bytes).
Bytes shortened(Bytes f, size_t keep) {
  f.resize(keep);
  store_le<uint32_t>(f.data() + wire::ctl::kLength, static_cast<uint32_t>(keep));
  return f;
}

std::vector<Case> cases(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto random_bytes = [&](size_t n) {
    Bytes b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng());
    return b;
  };
  std::vector<Case> v;
  v.push_back({"random-64KiB", false, random_bytes(64u << 10)});
  {
    // Plausible lengths, random types and bodies: each frame parses as garbage.
    Bytes b;
    for (int i = 0; i < 200; ++i) {
      const auto len = static_cast<uint32_t>(wire::ctl::kHeaderSize + rng() % 244);
      Bytes f = random_bytes(len);
      store_le<uint32_t>(f.data(), len);
      append(b, f);
    }
    v.push_back({"random-frames", false, std::move(b)});
  }
  v.push_back({"length-0", false, header(0, 1)});
  v.push_back({"length-11", false, header(11, 1)});
  v.push_back({"length-max+1", false, header(static_cast<uint32_t>(wire::ctl::kMaxFrame + 1), 1)});
  v.push_back({"length-ffffffff", false, header(0xffffffffu, 1)});
  for (uint8_t t : {uint8_t{0}, uint8_t{99}, uint8_t{255}})
    v.push_back({fmt::format("type-{}", t), false, header(wire::ctl::kHeaderSize, t)});
  {
    // The handshake's and session confirmation's types, empty: malformed, not "ok".
    Bytes b;
    for (uint8_t t = 11; t <= 15; ++t) append(b, header(wire::ctl::kHeaderSize, t));
    v.push_back({"reserved-types-empty", false, std::move(b)});
  }
  {
    Bytes f = subscribe_frame(5, "");
    store_le<uint8_t>(f.data() + wire::ctl::kVersion, 7);
    v.push_back({"version-7", false, std::move(f)});
  }
  {
    // Subscribe whose credential length runs past the end of its frame.
    Bytes f = header(24 + 10, static_cast<uint8_t>(wire::CtlType::kSubscribe));
    Bytes body(22, std::byte{0});
    store_le<uint16_t>(body.data() + 0, 1);      // channel
    store_le<uint16_t>(body.data() + 2, 200);    // credential length: 200, 10 present
    store_le<uint32_t>(body.data() + 8, 0xffffffffu);
    append(f, body);
    v.push_back({"subscribe-credential-overrun", false, std::move(f)});
  }
  {
    // Subscribe listing 2^31 instruments and carrying none of them.
    Bytes f = header(24, static_cast<uint8_t>(wire::CtlType::kSubscribe));
    Bytes body(12, std::byte{0});
    store_le<uint16_t>(body.data() + 0, 1);
    store_le<uint32_t>(body.data() + 8, 0x80000000u);
    append(f, body);
    v.push_back({"subscribe-count-overrun", false, std::move(f)});
  }
  {
    Bytes f = subscribe_frame(6, "");
    f.resize(10);
    v.push_back({"truncated-then-close", false, std::move(f), true});
  }
  {
    Bytes b;
    append(b, wire::encode_control(8, wire::SnapshotRequest{}));
    wire::RetransmitRequest r;
    r.from_seq = 1;
    r.count = 1;
    append(b, wire::encode_control(9, r));
    v.push_back({"requests-before-subscribe", false, std::move(b)});
  }
  {
    // Frames only a publisher sends, sent to it.
    Bytes b;
    append(b, wire::encode_control(10, wire::SubscribeAck{}));
    append(b, wire::encode_control(11, wire::SnapshotDone{}));
    append(b, wire::encode_control(12, wire::ErrorReply{wire::ErrorCode::kMalformed, "from a client"}));
    v.push_back({"publisher-frames-from-client", true, std::move(b)});
  }
  v.push_back({"retransmit-empty-range", true, wire::encode_control(13, wire::RetransmitRequest{})});
  {
    wire::SnapshotRequest s;
    s.instruments.all = false;
    s.instruments.ids = {0xfffffff0u};
    v.push_back({"snapshot-out-of-range", true, wire::encode_control(14, s)});
  }
  {
    // Unsubscribe claiming a million and one ids, carrying one.
    Bytes f = header(wire::ctl::kHeaderSize + 8, static_cast<uint8_t>(wire::CtlType::kUnsubscribe));
    Bytes body(8, std::byte{0});
    store_le<uint32_t>(body.data(), (1u << 20) + 1);
    append(f, body);
    v.push_back({"unsubscribe-count-overrun", true, std::move(f)});
  }
  v.push_back({"status-report-short", true, shortened(wire::encode_control(15, wire::StatusReport{}), 20)});
  {
    Bytes b;
    for (int i = 0; i < 100; ++i) append(b, header(wire::ctl::kHeaderSize, 99, 1, static_cast<uint32_t>(i)));
    v.push_back({"hundred-unknown-frames", true, std::move(b)});
  }
  return v;
}

}  // namespace

int garbage(const std::string& address, uint64_t seed, unsigned timeout_ms) {
  const std::string addr = resolve_address(address);
  fmt::print("garbage: {} (seed {}), each case on its own connection, {} ms for an answer\n", addr, seed, timeout_ms);
  uint64_t n_error = 0, n_closed = 0, n_silent = 0, n_other = 0, n_failed = 0;
  const auto all = cases(seed);
  for (const Case& k : all) {
    if (g_stop) break;
    std::string why;
    auto c = Conn::open(addr, &why);
    if (!c) {
      fmt::print("case={} outcome=no-connection ({})\n", k.name, why);
      ++n_failed;
      continue;
    }
    if (k.subscribe_first) {
      auto ack = subscribe(*c, "", monotonic_ns() + 2 * kNsPerSec);
      if (!ack || ack->kind != Answer::Kind::kAck) {
        fmt::print("case={} outcome=no-subscription ({})\n", k.name, ack ? ack->text : "no answer");
        ++n_failed;
        continue;
      }
    }
    const uint64_t t0 = monotonic_ns();
    const uint64_t deadline = t0 + timeout_ms * kNsPerMs;
    // A publisher that closes mid-write has answered too: the outcome below sees the close.
    (void)c->write_all(k.bytes, deadline);
    if (k.shut_write) ::shutdown(c->fd(), SHUT_WR);
    auto a = c->await(deadline);
    std::string outcome;
    if (a && a->kind == Answer::Kind::kError) {
      outcome = fmt::format("error code={}", wire::to_string(a->error));
      ++n_error;
    } else if (a) {
      outcome = fmt::format("other-answer type={}", a->type);
      ++n_other;
    } else if (c->closed()) {
      outcome = "closed";
      ++n_closed;
    } else {
      outcome = "silent";
      ++n_silent;
    }
    fmt::print("case={} bytes={} outcome={} after_ms={}\n", k.name, k.bytes.size(), outcome, ms_since(t0));
  }
  Report()
      .add("cases", static_cast<uint64_t>(all.size()))
      .add("error", n_error)
      .add("closed", n_closed)
      .add("other", n_other)
      .add("silent", n_silent)
      .add("not_run", n_failed)
      .print();
  return 0;
}

}  // namespace mdcast::attack

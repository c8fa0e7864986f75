// What the StreamControlServer tests share: raw client sockets on an abstract
// Unix socket, frames of any size, and a fake ControlHandler that records
// what the server made it do and can stream a long reply.
//
// Time is injected: each test drives poll(h, now) with a clock of its own
// and never sleeps for timing; only the order of events on real sockets is
// relied on (a send() returns once the bytes are in the server's socket).
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media::test {

using Bytes = std::vector<std::byte>;

// "test-<pid>-<tag>", unique per test and process.
inline std::string unique_name(const char* tag) { return fmt::format("test-{}-{}", ::getpid(), tag); }
inline std::string address_of(const std::string& name) { return "unix:@" + name; }

// A blocking client socket connected to the abstract name; -1 on failure.
inline int raw_connect(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&un), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Owns a client socket.
struct Sock {
  int fd = -1;
  explicit Sock(int f = -1) : fd(f) {}
  Sock(Sock&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  Sock& operator=(Sock&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Sock() {
    if (fd >= 0) ::close(fd);
  }
  [[nodiscard]] bool send_all(std::span<const std::byte> b) const {
    size_t off = 0;
    while (off < b.size()) {
      const ssize_t n = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads what is there now (nothing blocks); false once the server closed.
  bool drain(wire::FrameAssembler& in, std::vector<Bytes>& frames, size_t max_bytes = SIZE_MAX) const {
    std::byte buf[65536];
    size_t got = 0;
    while (got < max_bytes) {
      const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, max_bytes - got), MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      got += static_cast<size_t>(n);
      in.append({buf, static_cast<size_t>(n)});
      std::span<const std::byte> f;
      while (in.next(f) == wire::FrameAssembler::Status::kFrame) frames.emplace_back(f.begin(), f.end());
    }
    return true;
  }
  // Whether the server has closed this connection (EOF or reset once what
  // was sent is read).
  [[nodiscard]] bool closed_by_peer() const {
    std::byte buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) return true;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    }
  }
};

// A frame of exactly `size` bytes (>= 12) with a valid header; byte 12 on
// carries `tag` so replies can be told apart.
inline Bytes frame_of(size_t size, uint32_t rid, wire::CtlType type = wire::CtlType::kStatusReport, uint8_t tag = 0) {
  Bytes f(size, std::byte{tag});
  store_le<uint32_t>(f.data(), static_cast<uint32_t>(size));
  f[4] = std::byte{static_cast<uint8_t>(type)};
  f[5] = std::byte{1};
  f[6] = f[7] = std::byte{0};
  store_le<uint32_t>(f.data() + 8, rid);
  return f;
}
inline uint32_t rid_of(std::span<const std::byte> f) { return load_le<uint32_t>(f.data() + 8); }

// `count` small frames back to back, request ids first_rid, first_rid + 1, ...
inline Bytes burst(size_t count, uint32_t first_rid = 0, size_t frame_size = 44) {
  Bytes out;
  out.reserve(count * frame_size);
  for (size_t i = 0; i < count; ++i) {
    const Bytes f = frame_of(frame_size, first_rid + static_cast<uint32_t>(i));
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

// Records everything; admits on a Subscribe frame (or everyone, by default);
// replies as told; streams `stream_chunks` chunks on a SnapshotRequest,
// producing while queued_bytes stays under `stream_share`.
struct FakeHandler final : ControlHandler {
  bool admit_all = true;
  std::set<ClientId> admitted_set;
  std::set<ClientId> connected;
  std::vector<ClientId> disconnects;
  std::map<ClientId, std::vector<uint32_t>> executed;  // request ids, in order
  size_t frames = 0;
  size_t reply_bytes = 0;              // > 0: every StatusReport is answered with a frame this long
  std::map<ClientId, size_t> reply_for;  // per-client override of reply_bytes
  int refuse_after = -1;               // >= 0: on_frame answers false once a client sent this many
  // Streaming.
  size_t stream_chunks = 0, stream_chunk_bytes = 64u << 10, stream_share = 512u << 10;
  size_t chunks_per_call = SIZE_MAX;
  std::map<ClientId, size_t> left, sent_chunks;
  size_t writable_calls = 0;
  std::set<ClientId> seen_dead;  // on_frame for a client already disconnected: must stay empty

  void on_connect(ClientId c, uint64_t) override { connected.insert(c); }
  void on_disconnect(ClientId c) override {
    connected.erase(c);
    admitted_set.erase(c);
    left.erase(c);
    disconnects.push_back(c);
  }
  bool on_frame(ClientId c, std::span<const std::byte> f, uint64_t now, ReplySink& out) override {
    if (!connected.count(c)) seen_dead.insert(c);
    ++frames;
    auto& ex = executed[c];
    ex.push_back(rid_of(f));
    const auto type = static_cast<wire::CtlType>(f[4]);
    if (type == wire::CtlType::kSubscribe) {
      admitted_set.insert(c);
      out.send(c, frame_of(36, rid_of(f), wire::CtlType::kSubscribeAck));
    } else if (type == wire::CtlType::kSnapshotRequest) {
      left[c] = stream_chunks;
      produce(c, out);
    } else {
      const auto it = reply_for.find(c);
      const size_t n = it != reply_for.end() ? it->second : reply_bytes;
      if (n) out.send(c, frame_of(n, rid_of(f), wire::CtlType::kSnapshotData));
    }
    (void)now;
    return refuse_after < 0 || ex.size() < static_cast<size_t>(refuse_after);
  }
  [[nodiscard]] bool admitted(ClientId c) const noexcept override { return admit_all || admitted_set.count(c); }
  [[nodiscard]] bool has_pending(ClientId c) const noexcept override {
    const auto it = left.find(c);
    return it != left.end() && it->second > 0;
  }
  void on_writable(ClientId c, uint64_t, ReplySink& out) override {
    ++writable_calls;
    produce(c, out);
  }
  void produce(ClientId c, ReplySink& out) {
    size_t n = 0;
    auto& l = left[c];
    while (l > 0 && n < chunks_per_call && out.queued_bytes(c) < stream_share) {
      out.send(c, frame_of(stream_chunk_bytes, static_cast<uint32_t>(sent_chunks[c]++), wire::CtlType::kSnapshotData));
      --l;
      ++n;
    }
  }
};

// The injected clock: starts at 1 s, advances by `step` per poll.
struct Clock {
  uint64_t now = kNsPerSec;
  uint64_t tick(uint64_t step = kNsPerMs) { return now += step; }
};

}  // namespace mdcast::media::test

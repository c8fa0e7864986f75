#include "settings.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
#include <toml++/toml.h>

#include "mdcast/core/error.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/media/udp/udp_options.hpp"

namespace mdcast::app {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Parses a non-negative decimal number with an optional suffix from a table.
double number_with_suffix(const std::string& raw, const std::map<std::string, double>& suffixes, double dflt_mult,
                          const char* what, const char* example) {
  const std::string v = trim(raw);
  size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) ++i;
  const std::string num = v.substr(0, i);
  const std::string suf = trim(v.substr(i));
  if (num.empty()) fail("'{}' is not {} (example: {})", raw, what, example);
  double x = 0;
  try {
    size_t used = 0;
    x = std::stod(num, &used);
    if (used != num.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    fail("'{}' is not {} (example: {})", raw, what, example);
  }
  double mult = dflt_mult;
  if (!suf.empty()) {
    auto it = suffixes.find(suf);
    if (it == suffixes.end()) fail("'{}' is not {}: unknown unit '{}' (example: {})", raw, what, suf, example);
    mult = it->second;
  }
  if (!std::isfinite(x * mult)) fail("'{}' is out of range", raw);
  return x * mult;
}

bool parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  fail("'{}' is not a boolean (true or false)", v);
}

template <class T>
T parse_uint(const std::string& v, uint64_t lo, uint64_t hi) {
  const double x = number_with_suffix(v, {{"k", 1e3}, {"M", 1e6}}, 1, "a whole number", "16, 1k");
  if (x != std::floor(x) || x < static_cast<double>(lo) || x > static_cast<double>(hi))
    fail("'{}' must be a whole number in [{}, {}]", v, lo, hi);
  return static_cast<T>(x);
}

double parse_fraction(const std::string& v) {
  const double x = number_with_suffix(v, {{"%", 0.01}}, 1, "a fraction", "0.01 or 1%");
  if (x < 0 || x >= 1) fail("'{}' must be a fraction in [0, 1)", v);
  return x;
}

struct Key {
  std::string help;
  std::function<void(Settings&, const std::string&)> set;
};

const std::map<std::string, Key>& registry() {
  static const std::map<std::string, Key> r = [] {
    std::map<std::string, Key> m;
    auto add = [&](std::string k, std::string help, std::function<void(Settings&, const std::string&)> f) {
      m.emplace(std::move(k), Key{std::move(help), std::move(f)});
    };
    // [feed]
    add("feed.medium", "auto | shm | udp | verbs", [](Settings& s, const std::string& v) {
      if (v == "auto") s.feed.medium = MediumKind::kAuto;
      else if (v == "shm") s.feed.medium = MediumKind::kShm;
      else if (v == "udp") s.feed.medium = MediumKind::kUdp;
      else if (v == "verbs") s.feed.medium = MediumKind::kVerbs;
      else fail("'{}' is not a medium (auto, shm, udp, verbs)", v);
    });
    add("feed.name", "feed name: the shm ring and control socket derive from it", [](Settings& s, const std::string& v) {
      if (v.empty() || v.size() > 64 || v.find_first_of("/ \t") != std::string::npos)
        fail("'{}' is not a feed name (1-64 characters, no '/' or spaces)", v);
      s.feed.name = v;
    });
    add("feed.channel", "channel id (1-65535)", [](Settings& s, const std::string& v) {
      s.feed.channel = parse_uint<uint16_t>(v, 1, 65535);
    });
    add("feed.max_instruments", "instrument id space of the books", [](Settings& s, const std::string& v) {
      s.feed.max_instruments = parse_uint<uint32_t>(v, 1, 1u << 20);
    });
    add("feed.max_orders", "resting orders the books can hold", [](Settings& s, const std::string& v) {
      s.feed.max_orders = parse_uint<uint32_t>(v, 16, 1u << 29);
    });
    add("feed.max_levels", "price levels per side per instrument", [](Settings& s, const std::string& v) {
      s.feed.max_levels = parse_uint<uint32_t>(v, 4, 1u << 16);
    });
    add("feed.idle", "spin | yield | backoff | sleep | block: what a loop does with no work", [](Settings& s, const std::string& v) {
      if (!IdleStrategy::parse(v, s.feed.idle)) fail("'{}' is not an idle strategy (spin, yield, backoff, sleep, block)", v);
    });
    add("feed.control_poll", "interval between control-plane polls of a busy loop (a poll is a system call)",
        [](Settings& s, const std::string& v) { s.feed.control_poll_ns = parse_duration(v); });
    add("feed.control", "control address override (unix:@name, tcp:host:port)", [](Settings& s, const std::string& v) {
      s.feed.control = v;
    });
    // [publisher]
    add("publisher.rate", "synthetic messages per second", [](Settings& s, const std::string& v) {
      s.pub.rate = parse_rate(v);
      if (s.pub.rate <= 0) fail("rate must be positive");
    });
    add("publisher.duration", "how long to publish", [](Settings& s, const std::string& v) { s.pub.duration_ns = parse_duration(v); });
    add("publisher.instruments", "synthetic instruments", [](Settings& s, const std::string& v) {
      s.pub.instruments = parse_uint<uint32_t>(v, 1, 1u << 20);
    });
    add("publisher.seed", "order-flow seed", [](Settings& s, const std::string& v) { s.pub.seed = parse_uint<uint64_t>(v, 0, 1ull << 53); });
    add("publisher.max_datagram", "datagram size limit (0: the medium's)", [](Settings& s, const std::string& v) {
      s.pub.max_datagram = parse_size(v);
    });
    add("publisher.flush_interval", "longest a partly filled datagram waits", [](Settings& s, const std::string& v) {
      s.pub.flush_interval_ns = parse_duration(v);
    });
    add("publisher.heartbeat_interval", "idle time before a heartbeat", [](Settings& s, const std::string& v) {
      s.pub.heartbeat_interval_ns = parse_duration(v);
      if (!s.pub.heartbeat_interval_ns) fail("heartbeat interval must be positive");
    });
    add("publisher.retransmit_bytes", "retransmit ring size (verbs; over shm the shm ring is the retransmit ring: shm.slots)", [](Settings& s, const std::string& v) {
      s.pub.retransmit_bytes = parse_size(v);
    });
    add("publisher.pacing", "none | fixed | slowest", [](Settings& s, const std::string& v) {
      if (v == "none") s.pub.pacing = feed::PacingMode::kNone;
      else if (v == "fixed") s.pub.pacing = feed::PacingMode::kFixed;
      else if (v == "slowest") s.pub.pacing = feed::PacingMode::kSlowest;
      else fail("'{}' is not a pacing policy (none, fixed, slowest)", v);
    });
    add("publisher.pacing_rate", "fixed pacing rate, messages/s", [](Settings& s, const std::string& v) { s.pub.pacing_rate = parse_rate(v); });
    add("publisher.pacing_min_rate", "floor of slowest-subscriber pacing", [](Settings& s, const std::string& v) {
      s.pub.pacing_min_rate = parse_rate(v);
    });
    add("publisher.linger", "keep serving recovery this long after the end", [](Settings& s, const std::string& v) {
      s.pub.linger_ns = parse_duration(v);
    });
    add("publisher.crc", "CRC-32C in every datagram", [](Settings& s, const std::string& v) { s.pub.crc = parse_bool(v); });
    add("publisher.sender_id", "id in every datagram (subscribers drop their own)", [](Settings& s, const std::string& v) {
      s.pub.sender_id = parse_uint<uint32_t>(v, 1, 0xffffu);  // a 16-bit header field
    });
    add("publisher.session", "session id (0: 64 random bits; a fixed id is for tests: never reuse one)", [](Settings& s, const std::string& v) {
      s.pub.session = parse_uint<uint64_t>(v, 0, ~uint64_t{0});
    });
    add("publisher.wait_subscribers", "hold publishing until this many subscribers have subscribed", [](Settings& s, const std::string& v) {
      s.pub.wait_subscribers = parse_uint<uint32_t>(v, 0, 100000);
    });
    add("publisher.result", "write a result file at the end", [](Settings& s, const std::string& v) { s.pub.result = v; });
    add("publisher.secrets", "secrets file (identity, secret, entitlement per line; chmod 600): clients must prove an identity",
        [](Settings& s, const std::string& v) { s.pub.secrets = v; });
    // [subscriber]
    add("subscriber.instruments", "all | id list such as 0-9,20", [](Settings& s, const std::string& v) {
      if (v == "all") {
        s.sub.all_instruments = true;
        s.sub.instruments.clear();
      } else {
        s.sub.all_instruments = false;
        s.sub.instruments = parse_id_list(v);
      }
    });
    add("subscriber.identity", "identity proven to the publisher (its line in subscriber.secret_file)",
        [](Settings& s, const std::string& v) {
          if (!wire::valid_identity(v)) fail("'{}' is not an identity (1-64 characters of A-Z a-z 0-9 . _ - @ +)", v);
          s.sub.identity = v;
        });
    add("subscriber.secret_file", "file with this subscriber's identity and secret (chmod 600): authenticate, mutually",
        [](Settings& s, const std::string& v) { s.sub.secret_file = v; });
    add("subscriber.verify", "check books against heartbeat checksums", [](Settings& s, const std::string& v) { s.sub.verify = parse_bool(v); });
    add("subscriber.print", "print every delivered message", [](Settings& s, const std::string& v) { s.sub.print = parse_bool(v); });
    add("subscriber.capacity", "messages/s reported to the publisher (slowest pacing)", [](Settings& s, const std::string& v) {
      s.sub.capacity = static_cast<uint64_t>(parse_rate(v));
    });
    add("subscriber.inject_loss", "drop this fraction of datagrams on arrival (demonstrates recovery)", [](Settings& s, const std::string& v) {
      s.sub.inject_loss = parse_fraction(v);
    });
    add("subscriber.duration", "stop after this long (0: at the end of the session)", [](Settings& s, const std::string& v) {
      s.sub.duration_ns = parse_duration(v);
    });
    add("subscriber.wait", "how long to wait for the publisher to appear", [](Settings& s, const std::string& v) { s.sub.wait_ns = parse_duration(v); });
    add("subscriber.publisher_timeout", "silence after which the publisher is reported missing", [](Settings& s, const std::string& v) {
      s.sub.publisher_timeout_ns = parse_duration(v);
    });
    add("subscriber.give_up", "silence after which the subscriber exits", [](Settings& s, const std::string& v) { s.sub.give_up_ns = parse_duration(v); });
    add("subscriber.window_bytes", "out-of-order/recovery buffer", [](Settings& s, const std::string& v) { s.sub.window_bytes = parse_size(v); });
    add("subscriber.sender_id", "own sender id (datagrams carrying it are dropped)", [](Settings& s, const std::string& v) {
      s.sub.sender_id = parse_uint<uint32_t>(v, 0, 0xffffffffu);
    });
    add("subscriber.result", "write a result file at the end", [](Settings& s, const std::string& v) { s.sub.result = v; });
    // [shm]
    add("shm.slots", "ring slots (over shm also the publisher's retransmit history)", [](Settings& s, const std::string& v) { s.shm.slots = parse_uint<size_t>(v, 16, 1u << 24); });
    add("shm.max_datagram", "ring slot payload", [](Settings& s, const std::string& v) {
      s.shm.max_datagram = parse_size(v);
      if (s.shm.max_datagram < 256 || s.shm.max_datagram > 4096) fail("'{}' must be in [256, 4096]", v);
    });
    add("shm.huge_pages", "use hugetlbfs when available", [](Settings& s, const std::string& v) { s.shm.huge_pages = parse_bool(v); });
    add("shm.dir", "ring directory (default /dev/hugepages or /dev/shm)", [](Settings& s, const std::string& v) { s.shm.dir = v; });
    add("shm.group", "publisher: group whose members may read the ring (mode 0640); empty: this user only (0600)",
        [](Settings& s, const std::string& v) { s.shm.group = v; });
    add("shm.max_bytes", "publisher: largest ring it creates (a larger one is refused before anything is allocated)",
        [](Settings& s, const std::string& v) { s.shm.max_bytes = parse_size(v); });
    add("shm.publisher_user", "subscriber: user (name or uid) whose ring it trusts; empty: its own user",
        [](Settings& s, const std::string& v) { s.shm.publisher_user = v; });
    // [control]: the publisher's control transport (shm's Unix socket; TCP for UDP)
    add("control.max_clients", "publisher: admitted (authenticated, subscribed) control clients at most",
        [](Settings& s, const std::string& v) { s.control_server.max_clients = parse_uint<size_t>(v, 1, 1u << 20); });
    add("control.max_unadmitted", "publisher: connections not yet admitted at most (the oldest makes room for a new one)",
        [](Settings& s, const std::string& v) { s.control_server.max_unadmitted = parse_uint<size_t>(v, 1, 1u << 16); });
    add("control.reply_budget", "publisher: reply bytes queued for all clients together (the largest queue is cut past it)",
        [](Settings& s, const std::string& v) { s.control_server.reply_budget_bytes = parse_size(v); });
    add("control.client_reply_share", "publisher: reply bytes one client may have queued unread (then it is cut off)",
        [](Settings& s, const std::string& v) { s.control_server.client_reply_bytes = parse_size(v); });
    add("control.frames_per_poll", "publisher: control requests handled per poll of the publishing thread",
        [](Settings& s, const std::string& v) { s.control_server.frames_per_poll = parse_uint<size_t>(v, 1, 1u << 16); });
    add("control.unadmitted_timeout", "publisher: a connection not admitted within this is closed",
        [](Settings& s, const std::string& v) { s.control_server.unadmitted_timeout_ns = parse_duration(v); });
    add("control.partial_frame_timeout", "publisher: a frame begun and not finished within this closes the connection",
        [](Settings& s, const std::string& v) { s.control_server.partial_frame_timeout_ns = parse_duration(v); });
    add("control.idle_timeout", "publisher: an admitted client that sends nothing for this long is closed",
        [](Settings& s, const std::string& v) { s.control_server.idle_timeout_ns = parse_duration(v); });
    // [verbs]
    add("verbs.device", "RDMA device (default: the one owning local_ip)", [](Settings& s, const std::string& v) { s.verbs.device = v; });
    add("verbs.port", "device port", [](Settings& s, const std::string& v) { s.verbs.port = parse_uint<uint8_t>(v, 1, 255); });
    add("verbs.gid_index", "GID index (RoCE v2 + IPv4: 1 on rxe and mlx5)", [](Settings& s, const std::string& v) {
      s.verbs.gid_index = parse_uint<int>(v, 0, 255);
    });
    add("verbs.local_ip", "local IPv4 address of the RDMA netdev", [](Settings& s, const std::string& v) { s.verbs.local_ip = v; });
    add("verbs.group", "multicast group IPv4 address", [](Settings& s, const std::string& v) { s.verbs.group = v; });
    add("verbs.qkey", "QKey shared by the group, below 0x80000000 (default 0x01234567, rdma_cm's: rdma-core tools such as mckey hear the feed; docs/protocol.md 1.4)", [](Settings& s, const std::string& v) {
      uint64_t q = 0;
      size_t used = 0;
      try {
        q = std::stoull(v, &used, 0);  // decimal, 0x hex or 0 octal
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || v[0] == '-' || q >= 0x80000000ull)
        fail("'{}' is not a usable QKey: a number below 0x80000000 (e.g. 0x01234567, the default)", v);
      s.verbs.qkey = static_cast<uint32_t>(q);
    });
    add("verbs.control_ip", "publisher: listen address; subscriber: the publisher's", [](Settings& s, const std::string& v) {
      s.verbs.control_ip = v;
    });
    add("verbs.control_port", "RC control port", [](Settings& s, const std::string& v) {
      s.verbs.control_port = parse_uint<uint16_t>(v, 1, 65535);
    });
    add("verbs.rdma_read", "retransmit by RDMA READ of the publisher's ring", [](Settings& s, const std::string& v) {
      s.verbs.rdma_read = parse_bool(v);
    });
    add("verbs.rate", "peak datagrams/s the receive ring is sized for (100 ms)", [](Settings& s, const std::string& v) {
      s.verbs.rate = parse_rate(v);
    });
    // [udp]
    add("udp.group", "rail A's multicast group and port, GROUP:PORT", [](Settings& s, const std::string& v) {
      (void)media::udp::GroupAddress::parse(v);
      s.udp.group = v;
    });
    add("udp.interface", "interface (name or IPv4 address) every send and join uses", [](Settings& s, const std::string& v) {
      s.udp.interface = v;
    });
    add("udp.rail_b", "a second rail, GROUP:PORT[@IFACE] (A/B feed); \"\" = none", [](Settings& s, const std::string& v) {
      if (!v.empty()) (void)media::udp::parse_rail(v);
      s.udp.rail_b = v;
    });
    add("udp.ttl", "multicast TTL (1: this subnet)", [](Settings& s, const std::string& v) { s.udp.ttl = parse_uint<uint8_t>(v, 1, 255); });
    add("udp.loop", "multicast loop (subscribers on the sender's host)", [](Settings& s, const std::string& v) { s.udp.loop = parse_bool(v); });
    add("udp.mtu", "MTU the datagram size derives from (0: the interface's; loopback 1500)", [](Settings& s, const std::string& v) {
      s.udp.mtu = parse_uint<uint32_t>(v, 0, 65535);
    });
    add("udp.gso", "UDP GSO (UDP_SEGMENT) where the kernel has it", [](Settings& s, const std::string& v) { s.udp.gso = parse_bool(v); });
    add("udp.gro", "UDP GRO where the kernel has it", [](Settings& s, const std::string& v) { s.udp.gro = parse_bool(v); });
    add("udp.busy_poll", "SO_BUSY_POLL time (e.g. 50us; 0: off)", [](Settings& s, const std::string& v) {
      s.udp.busy_poll_us = static_cast<uint32_t>(parse_duration(v) / kNsPerUs);
    });
    add("udp.rate", "peak datagrams/s the socket buffers hold 100 ms of", [](Settings& s, const std::string& v) { s.udp.rate = parse_rate(v); });
    add("udp.control_port", "publisher: TCP control port on the interface's address (0: a free one, announced)",
        [](Settings& s, const std::string& v) { s.udp.control_port = parse_uint<uint16_t>(v, 0, 65535); });
    add("udp.cut_a_after", "subscriber fault injection: drop rail A from this long after start", [](Settings& s, const std::string& v) {
      s.udp.cut_a_after_ns = parse_duration(v);
    });
    add("udp.cut_a_for", "subscriber fault injection: for this long (0: never)", [](Settings& s, const std::string& v) {
      s.udp.cut_a_for_ns = parse_duration(v);
    });
    // [demo]
    add("demo.subscribers", "subscriber processes", [](Settings& s, const std::string& v) {
      s.demo.subscribers = parse_uint<uint32_t>(v, 1, 256);
    });
    add("demo.loss", "loss injected into subscriber 1", [](Settings& s, const std::string& v) { s.demo.loss = parse_fraction(v); });
    add("demo.cut_rail_a", "udp with a rail B: subscriber 1 loses rail A for this long, from 2 s in", [](Settings& s, const std::string& v) {
      s.demo.cut_rail_a_ns = parse_duration(v);
    });
    add("demo.keep", "keep the run directory", [](Settings& s, const std::string& v) { s.demo.keep = parse_bool(v); });
    add("demo.progress", "live progress line", [](Settings& s, const std::string& v) { s.demo.progress = parse_bool(v); });
    return m;
  }();
  return r;
}

std::string node_text(const toml::node& n) {
  if (auto v = n.as_string()) return v->get();
  if (auto v = n.as_integer()) return std::to_string(v->get());
  if (auto v = n.as_floating_point()) return fmt::format("{}", v->get());
  if (auto v = n.as_boolean()) return v->get() ? "true" : "false";
  if (auto a = n.as_array()) {
    std::string out;
    for (const auto& e : *a) {
      if (!out.empty()) out += ",";
      out += node_text(e);
    }
    return out;
  }
  fail("unsupported value type");
}

std::string where_of(const std::string& path, const toml::node& n) {
  return fmt::format("{}:{}", path, n.source().begin.line);
}

// Keys that no longer exist, with what replaced them.
const char* removed_key(const std::string& key) {
  if (key == "subscriber.credential")
    return "credentials no longer travel: give the subscriber subscriber.identity and subscriber.secret_file "
           "(a line made by `mdcast secret new`)";
  if (key == "publisher.entitlement")
    return "credentials no longer travel: list identities, secrets and entitlements in a secrets file "
           "(`mdcast secret new --identity NAME --instruments LIST`) and set publisher.secrets to its path";
  return nullptr;
}

}  // namespace

std::string_view to_string(MediumKind m) {
  switch (m) {
    case MediumKind::kAuto: return "auto";
    case MediumKind::kShm: return "shm";
    case MediumKind::kUdp: return "udp";
    case MediumKind::kVerbs: return "verbs";
  }
  return "?";
}

uint64_t parse_duration(const std::string& v) {
  const double x = number_with_suffix(v, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9}},
                                      1e9, "a duration", "10s, 250ms, 20us");
  if (x > 1e18) fail("'{}' is too long a duration", v);
  return static_cast<uint64_t>(x);
}

uint64_t parse_size(const std::string& v) {
  const double x = number_with_suffix(
      v, {{"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"k", 1e3}, {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}},
      1, "a size", "4096, 64MiB");
  if (x != std::floor(x) || x > 1e15) fail("'{}' is not a whole number of bytes", v);
  return static_cast<uint64_t>(x);
}

double parse_rate(const std::string& v) {
  return number_with_suffix(v, {{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}}, 1, "a rate", "100000, 250k, 1.5M");
}

std::vector<uint32_t> parse_id_list(const std::string& v) {
  std::vector<uint32_t> out;
  size_t i = 0;
  while (i <= v.size()) {
    const size_t comma = v.find(',', i);
    const std::string part = trim(v.substr(i, comma == std::string::npos ? std::string::npos : comma - i));
    if (part.empty()) fail("'{}' is not an instrument list (example: 0-9,20,31)", v);
    const size_t dash = part.find('-');
    auto num = [&](const std::string& t) {
      if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 9)
        fail("'{}' is not an instrument list: '{}' is not an id (example: 0-9,20,31)", v, t);
      return static_cast<uint32_t>(std::stoul(t));
    };
    if (dash == std::string::npos) {
      out.push_back(num(part));
    } else {
      const uint32_t a = num(trim(part.substr(0, dash))), b = num(trim(part.substr(dash + 1)));
      if (b < a || b - a > (1u << 20)) fail("'{}' is not an instrument list: bad range '{}'", v, part);
      for (uint32_t x = a; x <= b; ++x) out.push_back(x);
    }
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return out;
}

std::string format_duration(uint64_t ns) {
  if (ns % kNsPerSec == 0) return fmt::format("{}s", ns / kNsPerSec);
  if (ns % kNsPerMs == 0) return fmt::format("{}ms", ns / kNsPerMs);
  if (ns % kNsPerUs == 0) return fmt::format("{}us", ns / kNsPerUs);
  return fmt::format("{}ns", ns);
}

void apply_setting(Settings& s, const std::string& key, const std::string& value, const std::string& where) {
  const auto& r = registry();
  auto it = r.find(key);
  if (it == r.end()) {
    if (const char* why = removed_key(key)) fail("{}: setting '{}' was removed: {}", where, key, why);
    fail("{}: unknown setting '{}'", where, key);
  }
  try {
    it->second.set(s, value);
  } catch (const Error& e) {
    fail("{}: {}: {}", where, key, e.what());
  }
}

void load_config(Settings& s, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail("config file {}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description());
  } catch (const std::exception& e) {
    fail("config file {}: {}", path, e.what());
  }
  const auto& r = registry();
  for (const auto& [section, node] : t) {
    const auto* tab = node.as_table();
    if (!tab) fail("{}: '{}' must be a [section] (feed, publisher, subscriber, control, shm, udp, verbs, demo)", where_of(path, node), section.str());
    for (const auto& [k, v] : *tab) {
      const std::string key = std::string(section.str()) + "." + std::string(k.str());
      if (const char* why = removed_key(key)) fail("{}: '{}' was removed: {}", where_of(path, v), key, why);
      if (!r.count(key)) {
        std::string known;
        for (const auto& [rk, _] : r)
          if (rk.rfind(std::string(section.str()) + ".", 0) == 0) known += (known.empty() ? "" : ", ") + rk.substr(section.str().size() + 1);
        fail("{}: unknown config key '{}'{}", where_of(path, v), key,
             known.empty() ? fmt::format(" (no section [{}])", section.str()) : fmt::format(" (known in [{}]: {})", section.str(), known));
      }
      std::string text;
      try {
        text = node_text(v);
      } catch (const Error&) {
        fail("{}: {}: unsupported value type", where_of(path, v), key);
      }
      apply_setting(s, key, text, where_of(path, v));
    }
  }
}

feed::PublisherConfig publisher_config(const Settings& s, uint64_t session) {
  if (s.pub.instruments > s.feed.max_instruments)
    fail("publisher.instruments {} exceeds feed.max_instruments {}", s.pub.instruments, s.feed.max_instruments);
  feed::PublisherConfig pc;
  pc.channel = s.feed.channel;
  pc.session = session;
  pc.sender_id = s.pub.sender_id;
  pc.max_datagram = s.pub.max_datagram;  // 0: the medium's natural size (its configure() decides)
  pc.flush_interval_ns = s.pub.flush_interval_ns;
  pc.heartbeat_interval_ns = s.pub.heartbeat_interval_ns;
  pc.retransmit_bytes = s.pub.retransmit_bytes;
  pc.crc = s.pub.crc;
  pc.pacing.mode = s.pub.pacing;
  pc.pacing.rate = s.pub.pacing_rate;
  pc.pacing.min_rate = s.pub.pacing_min_rate;
  pc.books = {s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
  return pc;
}

feed::ControlConfig control_config(const Settings& s) {
  feed::ControlConfig cc;
  if (!s.pub.secrets.empty())
    cc.secrets = std::make_shared<const feed::PublisherSecrets>(
        with_context("publisher.secrets", [&] { return feed::PublisherSecrets::load(s.pub.secrets); }));
  return cc;
}

feed::SubscriberConfig subscriber_config(const Settings& s) {
  feed::SubscriberConfig sc;
  sc.channel = s.feed.channel;
  sc.sender_id = s.sub.sender_id;
  if (!s.sub.identity.empty() && s.sub.secret_file.empty())
    fail("subscriber.identity '{}' needs subscriber.secret_file, the file with its secret", s.sub.identity);
  if (!s.sub.secret_file.empty())
    sc.secret = std::make_shared<const feed::ClientSecret>(with_context(
        "subscriber.secret_file", [&] { return feed::ClientSecret::load(s.sub.secret_file, s.sub.identity); }));
  sc.all_instruments = s.sub.all_instruments;
  sc.instruments = s.sub.instruments;
  sc.window_bytes = s.sub.window_bytes;
  sc.books = {s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
  sc.verify_checksums = s.sub.verify;
  sc.capacity = s.sub.capacity;
  sc.publisher_timeout_ns = s.sub.publisher_timeout_ns;
  sc.request_timeout_ns = 100 * kNsPerMs;
  sc.max_datagram = wire::kMaxDatagram;
  return sc;
}

media::fault::FaultProfile injected_faults(const Settings& s, uint64_t seed) {
  media::fault::FaultProfile f;
  f.seed = seed;
  f.loss = s.sub.inject_loss;
  return f;
}

std::vector<std::pair<std::string, std::string>> known_settings() {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& [k, e] : registry()) v.emplace_back(k, e.help);
  return v;
}

}  // namespace mdcast::app

// Every settings key: its section.name, the type and help --help shows, its
// parser (shared by files and flags) and how its value reads back (defaults in
// --help and --help-config come from a default Settings through it).
#include <fmt/format.h>

#include <algorithm>

#include "mdcast/core/affinity.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/settings/values.hpp"
#include "mdcast/wire/signature.hpp"

namespace mdcast::settings {

void add_key(KeyTable& t, std::string key, std::string type, std::string help,
             std::function<void(Settings&, const std::string&)> set, std::function<std::string(const Settings&)> get) {
  t.emplace(std::move(key), SettingKey{std::move(type), std::move(help), std::move(set), std::move(get)});
}

const KeyTable& setting_keys() {
  static const KeyTable r = [] {
    KeyTable m;
    auto add = [&m](auto&&... a) { add_key(m, std::forward<decltype(a)>(a)...); };
    // [feed]
    add("feed.medium", "MEDIUM", "auto | shm | udp | verbs", [](Settings& s, const std::string& v) {
      if (v == "auto") s.feed.medium = MediumKind::kAuto;
      else if (v == "shm") s.feed.medium = MediumKind::kShm;
      else if (v == "udp") s.feed.medium = MediumKind::kUdp;
      else if (v == "verbs") s.feed.medium = MediumKind::kVerbs;
      else fail("'{}' is not a medium (auto, shm, udp, verbs)", v);
    },
        [](const Settings& s) { return std::string(to_string(s.feed.medium)); });
    add("feed.name", "NAME", "feed name: the shm ring and control socket derive from it", [](Settings& s, const std::string& v) {
      if (v.empty() || v.size() > 64 || v.find_first_of("/ \t") != std::string::npos)
        fail("'{}' is not a feed name (1-64 characters, no '/' or spaces)", v);
      s.feed.name = v;
    },
        [](const Settings& s) { return s.feed.name; });
    add("feed.channel", "N", "channel id (1-65535)", [](Settings& s, const std::string& v) {
      s.feed.channel = parse_uint<uint16_t>(v, 1, 65535);
    },
        [](const Settings& s) { return std::to_string(s.feed.channel); });
    add("feed.channels", "N", "channels the feed is split over (1-16): each its own ring or group, sequence space and publishing agent; channel index k has id feed.channel + k",
        [](Settings& s, const std::string& v) { s.feed.channels = parse_uint<uint32_t>(v, 1, feed::kMaxChannels); },
        [](const Settings& s) { return std::to_string(s.feed.channels); });
    add("feed.channel_map", "RANGES", "instruments placed on channel indexes by hand, FIRST[-LAST]:INDEX,... (the others by the stable hash)",
        [](Settings& s, const std::string& v) { s.feed.channel_map = feed::ChannelMap::parse_ranges(v); },
        [](const Settings& s) { return feed::ChannelMap::format_ranges(s.feed.channel_map); });
    add("feed.max_instruments", "N", "instrument id space of the books", [](Settings& s, const std::string& v) {
      s.feed.max_instruments = parse_uint<uint32_t>(v, 1, 1u << 20);
    },
        [](const Settings& s) { return std::to_string(s.feed.max_instruments); });
    add("feed.max_orders", "N", "resting orders the books can hold", [](Settings& s, const std::string& v) {
      s.feed.max_orders = parse_uint<uint32_t>(v, 16, 1u << 29);
    },
        [](const Settings& s) { return std::to_string(s.feed.max_orders); });
    add("feed.max_levels", "N", "price levels per side per instrument", [](Settings& s, const std::string& v) {
      s.feed.max_levels = parse_uint<uint32_t>(v, 4, 1u << 16);
    },
        [](const Settings& s) { return std::to_string(s.feed.max_levels); });
    add("feed.idle", "IDLE", "spin | yield | backoff | sleep | block: what a loop does with no work", [](Settings& s, const std::string& v) {
      if (!IdleStrategy::parse(v, s.feed.idle)) fail("'{}' is not an idle strategy (spin, yield, backoff, sleep, block)", v);
    },
        [](const Settings& s) { return std::string(IdleStrategy::name(s.feed.idle)); });
    add("feed.idle_spins", "N", "backoff and block: pause rounds before a loop with no work yields the CPU",
        [](Settings& s, const std::string& v) { s.feed.idle_params.spins = parse_uint<uint32_t>(v, 0, 1u << 20); },
        [](const Settings& s) { return std::to_string(s.feed.idle_params.spins); });
    add("feed.idle_yields", "N", "backoff and block: sched_yield rounds after the spins, before it sleeps",
        [](Settings& s, const std::string& v) { s.feed.idle_params.yields = parse_uint<uint32_t>(v, 0, 1u << 20); },
        [](const Settings& s) { return std::to_string(s.feed.idle_params.yields); });
    add("feed.idle_backoff_min", "DURATION", "backoff and block: the first sleep, doubled each idle round",
        [](Settings& s, const std::string& v) {
          s.feed.idle_params.park_min_ns = parse_duration(v);
          if (!s.feed.idle_params.park_min_ns) fail("'{}': the first sleep must be positive (e.g. 1us)", v);
        },
        [](const Settings& s) { return format_duration(s.feed.idle_params.park_min_ns); });
    add("feed.idle_backoff_max", "DURATION",
        "backoff and block: the longest sleep: bounds the latency an idle loop adds to the next datagram",
        [](Settings& s, const std::string& v) {
          s.feed.idle_params.park_max_ns = parse_duration(v);
          if (!s.feed.idle_params.park_max_ns) fail("'{}': the longest sleep must be positive (e.g. 100us)", v);
        },
        [](const Settings& s) { return format_duration(s.feed.idle_params.park_max_ns); });
    add("feed.idle_sleep", "DURATION", "sleep: how long a loop with no work sleeps each round",
        [](Settings& s, const std::string& v) {
          s.feed.idle_params.sleep_ns = parse_duration(v);
          if (!s.feed.idle_params.sleep_ns) fail("'{}': the sleep must be positive (e.g. 50us)", v);
        },
        [](const Settings& s) { return format_duration(s.feed.idle_params.sleep_ns); });
    add("feed.control_poll", "DURATION", "interval between control-plane polls of a busy loop (a poll is a system call)",
        [](Settings& s, const std::string& v) { s.feed.control_poll_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.feed.control_poll_ns); });
    add("feed.control", "ADDRESS", "control address override (unix:@name, tcp:host:port)", [](Settings& s, const std::string& v) {
      s.feed.control = v;
    },
        [](const Settings& s) { return s.feed.control; });
    // [publisher]
    add("publisher.rate", "RATE", "synthetic messages per second", [](Settings& s, const std::string& v) {
      s.pub.rate = parse_rate(v);
      if (s.pub.rate <= 0) fail("rate must be positive");
    },
        [](const Settings& s) { return format_rate(s.pub.rate); });
    add("publisher.duration", "DURATION", "how long to publish (with publisher.boundaries=input: rate x duration messages, so that a pair's members end alike)", [](Settings& s, const std::string& v) { s.pub.duration_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.pub.duration_ns); });
    add("publisher.instruments", "N", "synthetic instruments", [](Settings& s, const std::string& v) {
      s.pub.instruments = parse_uint<uint32_t>(v, 1, 1u << 20);
    },
        [](const Settings& s) { return std::to_string(s.pub.instruments); });
    add("publisher.seed", "N", "order-flow seed", [](Settings& s, const std::string& v) { s.pub.seed = parse_uint<uint64_t>(v, 0, 1ull << 53); },
        [](const Settings& s) { return std::to_string(s.pub.seed); });
    add("publisher.max_datagram", "SIZE", "datagram size limit (0: the medium's)", [](Settings& s, const std::string& v) {
      s.pub.max_datagram = parse_size(v);
    },
        [](const Settings& s) { return format_size(s.pub.max_datagram); });
    add("publisher.flush_interval", "DURATION", "longest a partly filled datagram waits", [](Settings& s, const std::string& v) {
      s.pub.flush_interval_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.pub.flush_interval_ns); });
    add("publisher.boundaries", "BOUNDARIES",
        "timer | input: what ends a datagram - full, or the flush timer; or full, or the end of an upstream packet "
        "(a pair's members cut the same datagrams; publisher.flush_interval unused)",
        [](Settings& s, const std::string& v) {
          if (v == "timer") s.pub.boundaries = feed::Boundaries::kTimer;
          else if (v == "input") s.pub.boundaries = feed::Boundaries::kInput;
          else fail("'{}' is not a datagram boundary rule (timer, input)", v);
        },
        [](const Settings& s) { return std::string(s.pub.boundaries == feed::Boundaries::kInput ? "input" : "timer"); });
    add("publisher.packet_messages", "N",
        "synthetic flow in upstream packets of 1..N messages drawn from the seed, each ending with a flush (0: none)",
        [](Settings& s, const std::string& v) { s.pub.packet_messages = parse_uint<uint32_t>(v, 0, 4096); },
        [](const Settings& s) { return std::to_string(s.pub.packet_messages); });
    add("publisher.large_every", "N", "every Nth synthetic message is an opaque one of publisher.large_bytes (0: none)",
        [](Settings& s, const std::string& v) { s.pub.large_every = parse_uint<uint32_t>(v, 0, 1u << 30); },
        [](const Settings& s) { return std::to_string(s.pub.large_every); });
    add("publisher.large_bytes", "SIZE", "length of the large synthetic messages (fragmented above a datagram's room)",
        [](Settings& s, const std::string& v) { s.pub.large_bytes = static_cast<uint32_t>(parse_size(v)); if (s.pub.large_bytes < 1 || s.pub.large_bytes > 65535) fail("{} bytes: a large message is 1 to 65535 bytes", s.pub.large_bytes); },
        [](const Settings& s) { return format_size(s.pub.large_bytes); });
    add("publisher.crash_drill", "POINT",
        "a takeover rehearsal: once the process gets SIGUSR1 it dies (SIGKILL) at the next such point: fragment "
        "(right after a datagram that ends inside a fragmented message) or snapshot (right after a snapshot frame, "
        "more to come); empty: none (docs/operations.md, 'Rehearsing a takeover')",
        [](Settings& s, const std::string& v) {
          const auto p = parse_drill_point(v);
          if (!p) fail("'{}': a crash drill's point is fragment or snapshot", v);
          s.pub.crash_drill = *p;
        },
        [](const Settings& s) { return std::string(drill_point_name(s.pub.crash_drill)); });
    // [pair]
    add("pair.peer", "RAIL",
        "the other member's rail (udp: GROUP:PORT[@IFACE]; shm: its feed name): join the session it publishes, "
        "catching up by replaying the input quietly, and when stopped, leave the session to it while it publishes on "
        "(docs/operations.md, 'Publisher pairs'); empty: begin a session, end it when stopped",
        [](Settings& s, const std::string& v) { s.pair.peer = v; },
        [](const Settings& s) { return s.pair.peer; });
    add("pair.join_timeout", "DURATION", "with pair.peer: no session confirmed by the peer by then, begin one alone; stopped, and the "
        "peer did not publish past this member by then, end the session",
        [](Settings& s, const std::string& v) { s.pair.join_timeout_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.pair.join_timeout_ns); });
    // [doctor]
    add("doctor.processes", "N",
        "check this host for N subscriber processes of one publisher or relay here: their memory together (at these "
        "settings), the descriptors, control clients and reader slots they take (0: no such check)",
        [](Settings& s, const std::string& v) { s.doctor.processes = parse_uint<uint32_t>(v, 0, 1u << 20); },
        [](const Settings& s) { return std::to_string(s.doctor.processes); });
    // [relay]
    add("relay.conflate", "DURATION",
        "publish a conflated feed of its own: each changed instrument's book once per interval (0: forward every "
        "datagram under the upstream's session and sequence numbers)",
        [](Settings& s, const std::string& v) { s.relay.conflate_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.relay.conflate_ns); });
    add("publisher.heartbeat_interval", "DURATION", "idle time before a heartbeat", [](Settings& s, const std::string& v) {
      s.pub.heartbeat_interval_ns = parse_duration(v);
      if (!s.pub.heartbeat_interval_ns) fail("heartbeat interval must be positive");
    },
        [](const Settings& s) { return format_duration(s.pub.heartbeat_interval_ns); });
    add("publisher.retransmit_bytes", "SIZE", "retransmit ring size (verbs; over shm the shm ring is the retransmit ring: shm.slots)", [](Settings& s, const std::string& v) {
      s.pub.retransmit_bytes = parse_size(v);
    },
        [](const Settings& s) { return format_size(s.pub.retransmit_bytes); });
    add("publisher.pacing", "PACING", "none | fixed | slowest", [](Settings& s, const std::string& v) {
      if (v == "none") s.pub.pacing = feed::PacingMode::kNone;
      else if (v == "fixed") s.pub.pacing = feed::PacingMode::kFixed;
      else if (v == "slowest") s.pub.pacing = feed::PacingMode::kSlowest;
      else fail("'{}' is not a pacing policy (none, fixed, slowest)", v);
    },
        [](const Settings& s) { return std::string(pacing_name(s.pub.pacing)); });
    add("publisher.pacing_rate", "RATE", "fixed pacing rate, messages/s", [](Settings& s, const std::string& v) { s.pub.pacing_rate = parse_rate(v); },
        [](const Settings& s) { return format_rate(s.pub.pacing_rate); });
    add("publisher.pacing_min_rate", "RATE", "floor of slowest-subscriber pacing", [](Settings& s, const std::string& v) {
      s.pub.pacing_min_rate = parse_rate(v);
    },
        [](const Settings& s) { return format_rate(s.pub.pacing_min_rate); });
    add("publisher.linger", "DURATION", "keep serving recovery this long after the end", [](Settings& s, const std::string& v) {
      s.pub.linger_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.pub.linger_ns); });
    add("publisher.crc", "BOOL", "CRC-32C in every datagram", [](Settings& s, const std::string& v) { s.pub.crc = parse_bool(v); },
        [](const Settings& s) { return std::string(s.pub.crc ? "true" : "false"); });
    add("publisher.authenticate_data", "BOOL",
        "with publisher.secrets, tag every datagram with the session's data key (docs/security.md 1; not on shm)",
        [](Settings& s, const std::string& v) { s.pub.authenticate_data = parse_bool(v); },
        [](const Settings& s) { return std::string(s.pub.authenticate_data ? "true" : "false"); });
    add("publisher.data_secret_file", "FILE",
        "a secrets-file line both members of a publisher pair hold: the data key is derived from it (empty: random)",
        [](Settings& s, const std::string& v) { s.pub.data_secret_file = v; },
        [](const Settings& s) { return s.pub.data_secret_file; });
    add("publisher.sender_id", "N", "id in every datagram (subscribers drop their own)", [](Settings& s, const std::string& v) {
      s.pub.sender_id = parse_uint<uint32_t>(v, 1, 0xffffu);  // a 16-bit header field
    },
        [](const Settings& s) { return std::to_string(s.pub.sender_id); });
    add("publisher.session", "N", "session id (0: 64 random bits; a fixed id is for tests: never reuse one)", [](Settings& s, const std::string& v) {
      s.pub.session = parse_uint<uint64_t>(v, 0, ~uint64_t{0});
    },
        [](const Settings& s) { return std::to_string(s.pub.session); });
    add("publisher.wait_subscribers", "N", "hold publishing until this many subscribers have subscribed (each to at least one instrument)", [](Settings& s, const std::string& v) {
      s.pub.wait_subscribers = parse_uint<uint32_t>(v, 0, 100000);
    },
        [](const Settings& s) { return std::to_string(s.pub.wait_subscribers); });
    add("publisher.wait_subscribers_timeout", "DURATION",
        "how long publisher.wait_subscribers waits before the publisher gives up (a thousand processes starting on a "
        "few cores take minutes)",
        [](Settings& s, const std::string& v) { s.pub.wait_subscribers_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.pub.wait_subscribers_ns); });
    add("publisher.threads", "N", "publishing threads, each with its share of the channels (0: one per publisher.cpus entry, else 1)",
        [](Settings& s, const std::string& v) { s.pub.threads = parse_uint<uint32_t>(v, 0, feed::kMaxChannels); },
        [](const Settings& s) { return std::to_string(s.pub.threads); });
    add("publisher.cpus", "CPUS", "pin publishing thread t to the t-th CPU of this list (0,1 or 2-5; empty: not pinned)",
        [](Settings& s, const std::string& v) { s.pub.cpus = v.empty() ? std::vector<int>{} : parse_cpu_list(v); },
        [](const Settings& s) { return format_cpu_list(s.pub.cpus); });
    add("publisher.result", "FILE", "write a result file at the end", [](Settings& s, const std::string& v) { s.pub.result = v; },
        [](const Settings& s) { return s.pub.result; });
    add("publisher.secrets", "FILE", "secrets file (identity, secret, entitlement per line; chmod 600): clients must prove an identity",
        [](Settings& s, const std::string& v) { s.pub.secrets = v; },
        [](const Settings& s) { return s.pub.secrets; });
    // [subscriber]
    add("subscriber.cpu", "CPU", "pin the subscriber's thread to this CPU (none: not pinned)", [](Settings& s, const std::string& v) {
      if (v == "none" || v.empty()) {
        s.sub.cpu = -1;
        return;
      }
      const std::vector<int> c = parse_cpu_list(v);
      if (c.size() != 1) fail("'{}' is not one CPU (the subscriber is one thread)", v);
      s.sub.cpu = c.front();
    },
        [](const Settings& s) { return s.sub.cpu < 0 ? std::string("none") : std::to_string(s.sub.cpu); });
    add("subscriber.instruments", "IDS", "all | id list such as 0-9,20", [](Settings& s, const std::string& v) {
      if (v == "all") {
        s.sub.all_instruments = true;
        s.sub.instruments.clear();
      } else {
        s.sub.all_instruments = false;
        s.sub.instruments = parse_id_list(v);
      }
    },
        [](const Settings& s) { return s.sub.all_instruments ? std::string("all") : format_id_list(s.sub.instruments); });
    add("subscriber.identity", "IDENTITY", "identity proven to the publisher (its line in subscriber.secret_file)",
        [](Settings& s, const std::string& v) {
          if (!wire::valid_identity(v)) fail("'{}' is not an identity (1-64 characters of A-Z a-z 0-9 . _ - @ +)", v);
          s.sub.identity = v;
        },
        [](const Settings& s) { return s.sub.identity; });
    add("subscriber.secret_file", "FILE", "file with this subscriber's identity and secret (chmod 600): authenticate, mutually",
        [](Settings& s, const std::string& v) { s.sub.secret_file = v; },
        [](const Settings& s) { return s.sub.secret_file; });
    add("subscriber.verify", "BOOL", "check books against heartbeat checksums", [](Settings& s, const std::string& v) { s.sub.verify = parse_bool(v); },
        [](const Settings& s) { return std::string(s.sub.verify ? "true" : "false"); });
    add("subscriber.print", "BOOL", "print every delivered message", [](Settings& s, const std::string& v) { s.sub.print = parse_bool(v); },
        [](const Settings& s) { return std::string(s.sub.print ? "true" : "false"); });
    add("subscriber.capacity", "RATE", "messages/s reported to the publisher (slowest pacing)", [](Settings& s, const std::string& v) {
      s.sub.capacity = static_cast<uint64_t>(parse_rate(v));
    },
        [](const Settings& s) { return format_rate(static_cast<double>(s.sub.capacity)); });
    add("subscriber.inject_loss", "FRACTION", "drop this fraction of datagrams on arrival (demonstrates recovery)", [](Settings& s, const std::string& v) {
      s.sub.inject_loss = parse_fraction(v);
    },
        [](const Settings& s) { return fmt::format("{}", s.sub.inject_loss); });
    add("subscriber.duration", "DURATION", "stop after this long (0: at the end of the session)", [](Settings& s, const std::string& v) {
      s.sub.duration_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.sub.duration_ns); });
    add("subscriber.wait", "DURATION", "how long to wait for the publisher to appear", [](Settings& s, const std::string& v) { s.sub.wait_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.sub.wait_ns); });
    add("subscriber.publisher_timeout", "DURATION", "silence after which the publisher is reported missing", [](Settings& s, const std::string& v) {
      s.sub.publisher_timeout_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.sub.publisher_timeout_ns); });
    add("subscriber.pair_lag", "N", "a publisher pair: datagrams the other member may be behind without a reset (0: no pair)",
        [](Settings& s, const std::string& v) { s.sub.pair_lag = parse_uint<uint64_t>(v, 0, uint64_t{1} << 40); },
        [](const Settings& s) { return std::to_string(s.sub.pair_lag); });
    add("subscriber.authenticate_data", "BOOL",
        "with a secret, accept only datagrams tagged with the data key the publisher sent (docs/security.md 1)",
        [](Settings& s, const std::string& v) { s.sub.authenticate_data = parse_bool(v); },
        [](const Settings& s) { return std::string(s.sub.authenticate_data ? "true" : "false"); });
    add("subscriber.confirm_ahead", "BOOL",
        "hold datagrams a window beyond the publisher's last confirmed sequence until confirmed (docs/security.md 2; "
        "off only for a group no one else can send to)",
        [](Settings& s, const std::string& v) { s.sub.confirm_ahead = parse_bool(v); },
        [](const Settings& s) { return std::string(s.sub.confirm_ahead ? "true" : "false"); });
    add("subscriber.give_up", "DURATION", "silence after which the subscriber exits", [](Settings& s, const std::string& v) { s.sub.give_up_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.sub.give_up_ns); });
    add("subscriber.window_bytes", "SIZE", "out-of-order/recovery buffer", [](Settings& s, const std::string& v) { s.sub.window_bytes = parse_size(v); },
        [](const Settings& s) { return format_size(s.sub.window_bytes); });
    add("subscriber.sender_id", "N", "own sender id (datagrams carrying it are dropped)", [](Settings& s, const std::string& v) {
      s.sub.sender_id = parse_uint<uint32_t>(v, 0, 0xffffffffu);
    },
        [](const Settings& s) { return std::to_string(s.sub.sender_id); });
    add("subscriber.result", "FILE", "write a result file at the end", [](Settings& s, const std::string& v) { s.sub.result = v; },
        [](const Settings& s) { return s.sub.result; });
    add_shm_keys(m);
    // [control]: the publisher's control transport (shm's Unix socket; TCP for UDP)
    add("control.max_clients", "N", "publisher: admitted (authenticated, subscribed) control clients at most",
        [](Settings& s, const std::string& v) { s.control_server.max_clients = parse_uint<size_t>(v, 1, 1u << 20); },
        [](const Settings& s) { return std::to_string(s.control_server.max_clients); });
    add("control.max_clients_per_peer", "N",
        "publisher: admitted control clients of one peer (a uid on shm, an address on TCP) at most; 0: no share "
        "(the publisher's own user is exempt)",
        [](Settings& s, const std::string& v) { s.control_server.max_clients_per_peer = parse_uint<size_t>(v, 0, 1u << 20); },
        [](const Settings& s) { return std::to_string(s.control_server.max_clients_per_peer); });
    add("control.allow", "NETS", "publisher, TCP control: networks clients may connect from (a.b.c.d/n, comma-separated); "
        "empty: any",
        [](Settings& s, const std::string& v) { s.control_server.peers.allow = media::parse_networks(v, "control.allow"); },
        [](const Settings& s) { return media::format_networks(s.control_server.peers.allow); });
    add("control.max_unadmitted", "N", "publisher: connections not yet admitted at most (the oldest makes room for a new one)",
        [](Settings& s, const std::string& v) { s.control_server.max_unadmitted = parse_uint<size_t>(v, 1, 1u << 16); },
        [](const Settings& s) { return std::to_string(s.control_server.max_unadmitted); });
    add("control.reply_budget", "SIZE", "publisher: reply bytes queued for all clients together (the largest queue is cut past it)",
        [](Settings& s, const std::string& v) { s.control_server.reply_budget_bytes = parse_size(v); },
        [](const Settings& s) { return format_size(s.control_server.reply_budget_bytes); });
    add("control.client_reply_share", "SIZE", "publisher: reply bytes one client may have queued unread (then it is cut off)",
        [](Settings& s, const std::string& v) { s.control_server.client_reply_bytes = parse_size(v); },
        [](const Settings& s) { return format_size(s.control_server.client_reply_bytes); });
    add("control.frames_per_poll", "N", "publisher: control requests handled per poll of the publishing thread",
        [](Settings& s, const std::string& v) { s.control_server.frames_per_poll = parse_uint<size_t>(v, 1, 1u << 16); },
        [](const Settings& s) { return std::to_string(s.control_server.frames_per_poll); });
    add("control.unadmitted_timeout", "DURATION", "publisher: a connection not admitted within this is closed",
        [](Settings& s, const std::string& v) { s.control_server.unadmitted_timeout_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.control_server.unadmitted_timeout_ns); });
    add("control.partial_frame_timeout", "DURATION", "publisher: a frame begun and not finished within this closes the connection",
        [](Settings& s, const std::string& v) { s.control_server.partial_frame_timeout_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.control_server.partial_frame_timeout_ns); });
    add("control.idle_timeout", "DURATION", "publisher: an admitted client that sends nothing for this long is closed",
        [](Settings& s, const std::string& v) { s.control_server.idle_timeout_ns = parse_duration(v); },
        [](const Settings& s) { return format_duration(s.control_server.idle_timeout_ns); });
    add("control.io_uring", "BOOL", "publisher: idle control polls without a system call (io_uring); false: an epoll_wait every poll",
        [](Settings& s, const std::string& v) { s.control_server.use_io_uring = parse_bool(v); },
        [](const Settings& s) { return std::string(s.control_server.use_io_uring ? "true" : "false"); });
    add_verbs_keys(m);
    add_udp_keys(m);
    // [demo]
    add("demo.subscribers", "N", "subscriber processes", [](Settings& s, const std::string& v) {
      s.demo.subscribers = parse_uint<uint32_t>(v, 1, 256);
    },
        [](const Settings& s) { return std::to_string(s.demo.subscribers); });
    add("demo.loss", "FRACTION", "loss injected into subscriber 1", [](Settings& s, const std::string& v) { s.demo.loss = parse_fraction(v); },
        [](const Settings& s) { return fmt::format("{}", s.demo.loss); });
    add("demo.cut_rail_a", "DURATION", "udp with a rail B: subscriber 1 loses rail A for this long, from 2 s in", [](Settings& s, const std::string& v) {
      s.demo.cut_rail_a_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.demo.cut_rail_a_ns); });
    add("demo.cpus", "CPUS", "pin the demo's processes: the publisher's threads first, then subscriber 1, 2, ... (empty: not pinned)",
        [](Settings& s, const std::string& v) { s.demo.cpus = v.empty() ? std::vector<int>{} : parse_cpu_list(v); },
        [](const Settings& s) { return format_cpu_list(s.demo.cpus); });
    add("demo.keep", "BOOL", "keep the run directory", [](Settings& s, const std::string& v) { s.demo.keep = parse_bool(v); },
        [](const Settings& s) { return std::string(s.demo.keep ? "true" : "false"); });
    add("demo.progress", "BOOL", "live progress line", [](Settings& s, const std::string& v) { s.demo.progress = parse_bool(v); },
        [](const Settings& s) { return std::string(s.demo.progress ? "true" : "false"); });
    return m;
  }();
  return r;
}

}  // namespace mdcast::settings

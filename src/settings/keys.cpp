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

const std::map<std::string, SettingKey>& setting_keys() {
  static const std::map<std::string, SettingKey> r = [] {
    std::map<std::string, SettingKey> m;
    auto add = [&](std::string k, std::string type, std::string help, std::function<void(Settings&, const std::string&)> set,
                   std::function<std::string(const Settings&)> get) {
      m.emplace(std::move(k), SettingKey{std::move(type), std::move(help), std::move(set), std::move(get)});
    };
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
    add("publisher.duration", "DURATION", "how long to publish", [](Settings& s, const std::string& v) { s.pub.duration_ns = parse_duration(v); },
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
    // [pair]
    add("pair.peer", "RAIL",
        "the other member's rail (udp: GROUP:PORT[@IFACE]): join the session it publishes, catching up by replaying "
        "the input quietly, and when stopped, leave the session to it while it publishes on (docs/operations.md, 'A "
        "publisher pair over UDP'); empty: begin a session, end it when stopped",
        [](Settings& s, const std::string& v) {
          if (!v.empty()) UdpEntry::check_rail(v);
          s.pair.peer = v;
        },
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
    // [shm]
    add("shm.slots", "N", "datagrams of shm.max_datagram the ring holds (records are packed: more of smaller ones); over shm also the publisher's retransmit history", [](Settings& s, const std::string& v) { s.shm.slots = parse_uint<size_t>(v, 16, 1u << 24); },
        [](const Settings& s) { return std::to_string(s.shm.slots); });
    add("shm.max_datagram", "SIZE", "largest datagram in the ring", [](Settings& s, const std::string& v) {
      s.shm.max_datagram = parse_size(v);
      if (s.shm.max_datagram < 256 || s.shm.max_datagram > 4096) fail("'{}' must be in [256, 4096]", v);
    },
        [](const Settings& s) { return format_size(s.shm.max_datagram); });
    add("shm.huge_pages", "BOOL", "use hugetlbfs when available", [](Settings& s, const std::string& v) { s.shm.huge_pages = parse_bool(v); },
        [](const Settings& s) { return std::string(s.shm.huge_pages ? "true" : "false"); });
    add("shm.dir", "DIR", "ring directory (default /dev/hugepages or /dev/shm)", [](Settings& s, const std::string& v) { s.shm.dir = v; },
        [](const Settings& s) { return s.shm.dir; });
    add("shm.group", "GROUP", "publisher: group whose members may read the ring (mode 0640); empty: this user only (0600)",
        [](Settings& s, const std::string& v) { s.shm.group = v; },
        [](const Settings& s) { return s.shm.group; });
    add("shm.max_bytes", "SIZE", "publisher: largest ring it creates (a larger one is refused before anything is allocated)",
        [](Settings& s, const std::string& v) { s.shm.max_bytes = parse_size(v); },
        [](const Settings& s) { return format_size(s.shm.max_bytes); });
    add("shm.readers", "N", "publisher: reader slots, 16 bytes each: subscribers that can block when idle (the others back off)",
        [](Settings& s, const std::string& v) { s.shm.readers = parse_uint<size_t>(v, 0, 65536); },
        [](const Settings& s) { return std::to_string(s.shm.readers); });
    add("shm.publisher_user", "USER", "subscriber: user (name or uid) whose ring it trusts; empty: its own user",
        [](Settings& s, const std::string& v) { s.shm.publisher_user = v; },
        [](const Settings& s) { return s.shm.publisher_user; });
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
    // [verbs]
    add("verbs.device", "DEVICE", "RDMA device (default: the one owning local_ip)", [](Settings& s, const std::string& v) { s.verbs.device = v; },
        [](const Settings& s) { return s.verbs.device; });
    add("verbs.port", "N", "device port", [](Settings& s, const std::string& v) { s.verbs.port = parse_uint<uint8_t>(v, 1, 255); },
        [](const Settings& s) { return std::to_string(s.verbs.port); });
    add("verbs.gid_index", "N", "GID index (RoCE v2 + IPv4: 1 on rxe and mlx5)", [](Settings& s, const std::string& v) {
      s.verbs.gid_index = parse_uint<int>(v, 0, 255);
    },
        [](const Settings& s) { return std::to_string(s.verbs.gid_index); });
    add("verbs.local_ip", "IPV4", "local IPv4 address of the RDMA netdev", [](Settings& s, const std::string& v) { s.verbs.local_ip = v; },
        [](const Settings& s) { return s.verbs.local_ip; });
    add("verbs.group", "IPV4", "multicast group IPv4 address", [](Settings& s, const std::string& v) { s.verbs.group = v; },
        [](const Settings& s) { return s.verbs.group; });
    add("verbs.qkey", "QKEY", "QKey shared by the group, below 0x80000000 (rdma_cm's by default: rdma-core tools such as mckey hear the feed; docs/protocol.md 1.4)", [](Settings& s, const std::string& v) {
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
    },
        [](const Settings& s) { return fmt::format("{:#010x}", s.verbs.qkey); });
    add("verbs.control_ip", "IPV4", "publisher: listen address; subscriber: the publisher's", [](Settings& s, const std::string& v) {
      s.verbs.control_ip = v;
    },
        [](const Settings& s) { return s.verbs.control_ip; });
    add("verbs.control_port", "N", "RC control port", [](Settings& s, const std::string& v) {
      s.verbs.control_port = parse_uint<uint16_t>(v, 1, 65535);
    },
        [](const Settings& s) { return std::to_string(s.verbs.control_port); });
    add("verbs.rdma_read", "BOOL", "retransmit by RDMA READ of the publisher's ring", [](Settings& s, const std::string& v) {
      s.verbs.rdma_read = parse_bool(v);
    },
        [](const Settings& s) { return std::string(s.verbs.rdma_read ? "true" : "false"); });
    add("verbs.rate", "RATE", "peak datagrams/s the receive ring is sized for (100 ms)", [](Settings& s, const std::string& v) {
      s.verbs.rate = parse_rate(v);
    },
        [](const Settings& s) { return format_rate(s.verbs.rate); });
    // [udp]
    add("udp.group", "GROUP:PORT", "rail A's multicast group and port, GROUP:PORT (a unicast ADDR:PORT: a unicast leg, received at that address)", [](Settings& s, const std::string& v) {
      UdpEntry::check_group(v);
      s.udp.group = v;
    },
        [](const Settings& s) { return s.udp.group; });
    add("udp.interface", "IFACE", "interface (name or IPv4 address) every send and join uses", [](Settings& s, const std::string& v) {
      s.udp.interface = v;
    },
        [](const Settings& s) { return s.udp.interface; });
    add("udp.rail_b", "GROUP:PORT[@IF]", "a second rail, GROUP:PORT[@IFACE] (A/B feed); \"\" = none", [](Settings& s, const std::string& v) {
      if (!v.empty()) UdpEntry::check_rail(v);
      s.udp.rail_b = v;
    },
        [](const Settings& s) { return s.udp.rail_b; });
    add("udp.also_to", "ADDR:PORT,...", "publisher: also send every datagram to these (unicast legs to hosts multicast does not reach, each host's relay binds its ADDR:PORT as udp.group); \"\" = none", [](Settings& s, const std::string& v) {
      std::vector<std::string> to;
      for (size_t i = 0; i <= v.size();) {
        const size_t comma = std::min(v.find(',', i), v.size());
        if (comma > i) {
          to.push_back(v.substr(i, comma - i));
          UdpEntry::check_group(to.back());
        }
        i = comma + 1;
      }
      s.udp.also_to = std::move(to);
    },
        [](const Settings& s) {
          std::string out;
          for (const auto& t : s.udp.also_to) out += (out.empty() ? "" : ",") + t;
          return out;
        });
    add("udp.ttl", "N", "multicast TTL (1: this subnet)", [](Settings& s, const std::string& v) { s.udp.ttl = parse_uint<uint8_t>(v, 1, 255); },
        [](const Settings& s) { return std::to_string(s.udp.ttl); });
    add("udp.loop", "BOOL", "multicast loop (subscribers on the sender's host)", [](Settings& s, const std::string& v) { s.udp.loop = parse_bool(v); },
        [](const Settings& s) { return std::string(s.udp.loop ? "true" : "false"); });
    add("udp.mtu", "N", "MTU the datagram size derives from (0: the interface's; loopback 1500)", [](Settings& s, const std::string& v) {
      s.udp.mtu = parse_uint<uint32_t>(v, 0, 65535);
    },
        [](const Settings& s) { return std::to_string(s.udp.mtu); });
    add("udp.gso", "BOOL", "UDP GSO (UDP_SEGMENT) where the kernel has it", [](Settings& s, const std::string& v) { s.udp.gso = parse_bool(v); },
        [](const Settings& s) { return std::string(s.udp.gso ? "true" : "false"); });
    add("udp.gro", "BOOL", "UDP GRO where the kernel has it", [](Settings& s, const std::string& v) { s.udp.gro = parse_bool(v); },
        [](const Settings& s) { return std::string(s.udp.gro ? "true" : "false"); });
    add("udp.busy_poll", "DURATION", "SO_BUSY_POLL time (e.g. 50us; 0: off)", [](Settings& s, const std::string& v) {
      s.udp.busy_poll_us = static_cast<uint32_t>(parse_duration(v) / kNsPerUs);
    },
        [](const Settings& s) { return format_duration(uint64_t{s.udp.busy_poll_us} * kNsPerUs); });
    add("udp.rate", "RATE", "peak datagrams/s the socket buffers hold 100 ms of", [](Settings& s, const std::string& v) { s.udp.rate = parse_rate(v); },
        [](const Settings& s) { return format_rate(s.udp.rate); });
    add("udp.control_port", "N", "publisher: TCP control port on the interface's address (0: a free one, announced)",
        [](Settings& s, const std::string& v) { s.udp.control_port = parse_uint<uint16_t>(v, 0, 65535); },
        [](const Settings& s) { return std::to_string(s.udp.control_port); });
    add("udp.announce_key_file", "FILE",
        "publisher: sign the control-address announcements with the key this secrets-file line seeds "
        "(mdcast secret new; a pair's members share it)",
        [](Settings& s, const std::string& v) { s.udp.announce_key_file = v; },
        [](const Settings& s) { return s.udp.announce_key_file; });
    add("udp.announce_public_key", "HEX",
        "subscriber: follow only announcements this key signed (mdcast secret public FILE); \"\" = any",
        [](Settings& s, const std::string& v) {
          if (!v.empty() && !wire::parse_public_key(v))
            fail_usage("'{}' is not a public key (64 hex digits, from `mdcast secret public "
                       "FILE`)", v);
          s.udp.announce_public_key = v;
        },
        [](const Settings& s) { return s.udp.announce_public_key; });
    add("udp.cut_a_after", "DURATION", "subscriber fault injection: drop rail A from this long after start", [](Settings& s, const std::string& v) {
      s.udp.cut_a_after_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.udp.cut_a_after_ns); });
    add("udp.cut_a_for", "DURATION", "subscriber fault injection: for this long (0: never)", [](Settings& s, const std::string& v) {
      s.udp.cut_a_for_ns = parse_duration(v);
    },
        [](const Settings& s) { return format_duration(s.udp.cut_a_for_ns); });
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

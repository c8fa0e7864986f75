// A feed's settings by name: one struct per TOML section ([feed], [publisher],
// [pair], [relay], [subscriber], [control], [demo], [doctor], and each
// medium's: settings/media/<name>_settings.hpp), filled from
// defaults, then a TOML file (load_config), then single keys
// (apply_setting: `mdcast`'s flags). Every key has one parser, shared by the
// file and the flags, so a bad value gets the same clear message wherever it
// came from. From them, the engines' configurations (publisher_config ...)
// and, in media.hpp, the medium they name. `mdcast --help-config` lists the
// keys; an application reads the same files as `mdcast`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/drill.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/feed/channels.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/stream/stream_server.hpp"
#include "mdcast/record/frame.hpp"
#include "mdcast/settings/media/shm_settings.hpp"
#include "mdcast/settings/media/udp_settings.hpp"
#include "mdcast/settings/media/verbs_settings.hpp"


namespace mdcast::settings {

// A wrong setting or command line (exit_code::kUsage): the user fixes the
// command, not the host.
class UsageError : public Error {
 public:
  explicit UsageError(const Error& e) : Error(e.what()) {}
  using Error::Error;
};
template <class... Args>
[[noreturn]] void fail_usage(fmt::format_string<Args...> f, Args&&... args) {
  throw UsageError(fmt::format(f, std::forward<Args>(args)...));
}

enum class MediumKind : uint8_t { kAuto, kShm, kUdp, kVerbs };
std::string_view to_string(MediumKind m);

struct FeedOptions {
  MediumKind medium = MediumKind::kAuto;
  std::string name = "mdcast";       // the feed's name: shm ring and control socket derive from it
  uint16_t channel = 1;               // the feed's first channel id; channel index k is channel + k
  uint32_t channels = 1;             // 1..16: each its own group/ring, sequence space and publishing agent
  std::vector<feed::ChannelRange> channel_map;  // instruments placed by hand; the others by the stable hash
  uint32_t channel_index = 0;        // not a key: which channel these settings are of (channel_settings)
  // Not a key: a publisher of several channels hands each channel's medium
  // the inbox of its shared control endpoint (control is then that endpoint).
  std::shared_ptr<media::ConnectionInbox> control_inbox;
  uint32_t max_instruments = 1024;
  uint32_t max_orders = 1u << 20;
  uint32_t max_levels = 256;
  IdleMode idle = IdleMode::kSpin;
  IdleParams idle_params;            // feed.idle_spins, _yields, _backoff_min, _backoff_max, _sleep
  std::string control;               // control address override (default derived from name/medium)
  const StopFlag* stop = nullptr;    // not a key: a subscriber's wait for its publisher ends when it is requested
  uint64_t control_poll_ns = 100 * kNsPerUs;  // how often a busy loop looks at the control plane
};

struct PublisherOptions {
  double rate = 100'000;             // synthetic messages/s
  uint64_t duration_ns = 10 * kNsPerSec;
  uint32_t instruments = 100;
  uint64_t seed = 1;
  size_t max_datagram = 0;           // 0: the medium's natural size
  uint64_t flush_interval_ns = 20 * kNsPerUs;
  feed::Boundaries boundaries = feed::Boundaries::kTimer;  // kInput: the source's packets end datagrams, no timer
  uint32_t packet_messages = 0;      // synthetic source: 1..N messages per upstream packet (0: none)
  uint32_t large_every = 0;          // synthetic source: every Nth message opaque, large_bytes long (0: none)
  uint32_t large_bytes = 3000;
  DrillPoint crash_drill = DrillPoint::kNone;  // armed by SIGUSR1: die there (core/drill.hpp)
  uint64_t heartbeat_interval_ns = 100 * kNsPerMs;
  size_t retransmit_bytes = 64u << 20;
  feed::PacingMode pacing = feed::PacingMode::kNone;
  double pacing_rate = 1e6;
  double pacing_min_rate = 10'000;
  uint64_t linger_ns = 3 * kNsPerSec; // keep serving recovery after the end of the session
  bool crc = false;
  uint32_t sender_id = 1;
  std::string secrets;               // secrets file: identities, secrets, entitlements (empty: an open feed)
  bool authenticate_data = true;     // feed::PublisherConfig::authenticate_data (with secrets)
  std::string data_secret_file;      // feed::ControlConfig::data_secret (a pair's shared line; empty: random)
  std::string result;                // write a result file here at the end
  uint64_t session = 0;
  uint32_t wait_subscribers = 0;     // hold publishing until this many subscribed (demo, tests)
  uint64_t wait_subscribers_ns = 60 * kNsPerSec;  // ... for at most this long
  uint32_t threads = 0;              // publishing threads (0: one per CPU of `cpus`, else 1)
  std::vector<int> cpus;             // pin publishing thread t to cpus[t]
};

// A publisher pair's member (docs/architecture.md, "Publisher pairs").
struct PairOptions {
  std::string peer;                  // the other member's rail (udp: GROUP:PORT[@IFACE]; shm: its feed name); empty: not a rejoining member
  uint64_t join_timeout_ns = 2 * kNsPerSec;  // no confirmed session from the peer by then: begin a session alone
};

// `mdcast relay` beyond its two sides' settings.
struct RelayOptions {
  uint64_t conflate_ns = 0;          // 0: forward every datagram; else a conflated feed of its own, a point per interval
};

struct SubscriberOptions {
  bool all_instruments = true;
  std::vector<uint32_t> instruments;
  std::string identity;              // who this subscriber proves to be (empty: the secret file's only line)
  std::string secret_file;           // its secret (empty: an open feed, no authentication)
  bool verify = true;                // heartbeat checksums
  bool print = false;
  uint64_t capacity = 0;
  double inject_loss = 0;            // drop this fraction of received datagrams (shows recovery)
  uint64_t duration_ns = 0;          // 0: until the publisher ends its session
  uint64_t wait_ns = 10 * kNsPerSec; // wait this long for the publisher to appear
  uint64_t publisher_timeout_ns = 2 * kNsPerSec;
  uint64_t give_up_ns = 10 * kNsPerSec;  // exit when the publisher is silent this long
  uint64_t pair_lag = 0;             // feed::SubscriberConfig::pair_lag (a publisher pair; 0: none)
  bool confirm_ahead = true;         // feed::SubscriberConfig::confirm_ahead
  bool authenticate_data = true;     // feed::SubscriberConfig::authenticate_data (with a secret)
  size_t window_bytes = 16u << 20;
  uint32_t sender_id = 0;
  std::string result;
  int cpu = -1;                      // pin the subscriber's thread here (-1: not pinned)
};

// `mdcast doctor` beyond the feed's own settings.
struct DoctorOptions {
  uint32_t processes = 0;            // a host's fan-out to check: subscriber processes of one publisher or relay here
};

struct DemoOptions {
  uint32_t subscribers = 4;
  double loss = 0;                   // injected into subscriber 1
  uint64_t cut_rail_a_ns = 0;        // udp A/B: subscriber 1 loses rail A for this long, from 2 s in
  bool keep = false;                 // keep the run directory
  bool progress = true;
  std::vector<int> cpus;             // the publisher's threads first, then one per subscriber
};

struct Settings {
  FeedOptions feed;
  PublisherOptions pub;
  PairOptions pair;
  RelayOptions relay;
  SubscriberOptions sub;
  ShmOptions shm;
  media::StreamServerConfig control_server;  // [control]: what the publisher's control transport allows one client
  VerbsSettings verbs;
  UdpSettings udp;
  DemoOptions demo;
  DoctorOptions doctor;
};

// Sets key ("section.name") from text; `where` prefixes errors ("--rate",
// "demo.toml:7"). Throws Error.
void apply_setting(Settings& s, const std::string& key, const std::string& value, const std::string& where);
// Loads a TOML file; unknown keys and bad values are errors naming file:line.
void load_config(Settings& s, const std::string& path);
// Every known key: its value's type, help text and default (for --help and --help-config).
struct SettingInfo {
  std::string key, type, help, default_text;
};
std::vector<SettingInfo> known_settings();
// One of them; throws Error for an unknown key.
SettingInfo setting_info(const std::string& key);

// The engines' configurations from the settings: the one mapping, used by
// publish, subscribe, demo and bench alike. publisher_config and
// subscriber_config throw UsageError for settings that contradict each other
// (publisher.wait_subscribers above control.max_clients) and Error when the
// books, windows and retransmit rings they size (per channel) do not fit in
// the host's MemAvailable: before anything is allocated or created.
feed::PublisherConfig publisher_config(const Settings& s, uint64_t session);
feed::ControlConfig control_config(const Settings& s);
feed::SubscriberConfig subscriber_config(const Settings& s);
// feed.channels and feed.channel_map as a map (UsageError when wrong).
feed::ChannelMap channel_map(const Settings& s);
// publisher.threads, or one per publisher.cpus entry, or 1 (UsageError when
// they do not fit feed.channels or each other).
uint32_t publishing_threads(const Settings& s);
// publisher.session, or 64 fresh random bits.
uint64_t pick_session(const Settings& s);
// The synthetic order flow (publisher.seed, .instruments) within the books'
// feed.max_levels: what `mdcast publish` and the bench publish.
book::GeneratorConfig generator_config(const Settings& s);
// The addresses a recording's frames carry (record::WriterOptions::address):
// udp.group's, or verbs.group and the publisher's verbs.control_ip over
// verbs (UsageError when not IPv4). Error where the feed's datagrams
// (shm.max_datagram) would not fit a frame.
record::FrameAddress recording_address(const Settings& s);
// subscriber.inject_loss as a fault profile (inactive when 0).
media::fault::FaultProfile injected_faults(const Settings& s, uint64_t seed);

// Value parsers (exposed for tests). Each throws Error with an example of a good value.
uint64_t parse_duration(const std::string& v);
uint64_t parse_size(const std::string& v);
double parse_rate(const std::string& v);
std::vector<uint32_t> parse_id_list(const std::string& v);  // "0-9,20,31"
std::string format_duration(uint64_t ns);

}  // namespace mdcast::settings

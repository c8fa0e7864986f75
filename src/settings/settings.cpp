#include "mdcast/settings/settings.hpp"

#include <fmt/format.h>


#include <algorithm>
#include <map>
#include <toml++/toml.h>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/media/channel_group.hpp"
#include "mdcast/settings/suggest.hpp"
#include "mdcast/settings/values.hpp"

namespace mdcast::settings {
namespace {

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

// What the books (one BookSet per channel) and `extra` (a window or a
// retransmit ring per channel, named by its setting) take, against the
// host's MemAvailable: every one of these settings is in range for some
// host, so the refusal names the settings, their values and the bytes.
void check_footprint(const Settings& s, std::string_view role, uint64_t extra, std::string_view extra_key) {
  const book::BookConfig bc{s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
  const uint64_t levels = uint64_t{bc.max_instruments} * 2 * bc.max_levels * sizeof(book::Level);
  const uint64_t books = book::BookSet::footprint(bc);
  const uint64_t n = s.feed.channels;
  const uint64_t total = n * (books + extra);
  const std::string what = fmt::format(
      "the {}'s memory for books (feed.max_instruments {} x feed.max_levels {} per side: {}; feed.max_orders {}: {}){}{}", role,
      bc.max_instruments, bc.max_levels, format_bytes(levels), bc.max_orders, format_bytes(books - levels),
      extra ? fmt::format(" and {} ({})", extra_key, format_bytes(extra)) : std::string(),
      n > 1 ? fmt::format(" for each of feed.channels {}", n) : std::string());
  const uint64_t largest = std::max({levels, books - levels, extra});
  const std::string advice = largest == levels        ? "lower feed.max_levels or feed.max_instruments"
                             : largest == books - levels ? "lower feed.max_orders"
                                                        : fmt::format("lower {}", extra_key);
  check_memory(total, what, advice);
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

void apply_setting(Settings& s, const std::string& key, const std::string& value, const std::string& where) {
  const auto& r = setting_keys();
  auto it = r.find(key);
  if (it == r.end()) {
    if (const char* why = removed_key(key)) fail_usage("{}: setting '{}' was removed: {}", where, key, why);
    const std::string near = nearest_setting(key);
    fail_usage("{}: unknown setting '{}'{}", where, key,
               near.empty() ? std::string(" (mdcast --help-config lists them)") : fmt::format(": did you mean {}?", near));
  }
  try {
    it->second.set(s, value);
  } catch (const Error& e) {
    fail_usage("{}: {}: {}", where, key, e.what());
  }
}

void load_config(Settings& s, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail_usage("config file {}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description());
  } catch (const std::exception& e) {
    fail_usage("config file {}: {}", path, e.what());
  }
  const auto& r = setting_keys();
  for (const auto& [section, node] : t) {
    const auto* tab = node.as_table();
    if (!tab) fail_usage("{}: '{}' must be a [section] (feed, publisher, subscriber, control, shm, udp, verbs, demo)", where_of(path, node), section.str());
    for (const auto& [k, v] : *tab) {
      const std::string key = std::string(section.str()) + "." + std::string(k.str());
      if (const char* why = removed_key(key)) fail_usage("{}: '{}' was removed: {}", where_of(path, v), key, why);
      if (!r.count(key)) {
        if (const std::string near = nearest_setting(key); !near.empty())
          fail_usage("{}: unknown config key '{}': did you mean {}?", where_of(path, v), key, near);
        std::string known;
        for (const auto& [rk, _] : r)
          if (rk.rfind(std::string(section.str()) + ".", 0) == 0) known += (known.empty() ? "" : ", ") + rk.substr(section.str().size() + 1);
        fail_usage("{}: unknown config key '{}'{}", where_of(path, v), key,
             known.empty() ? fmt::format(" (no section [{}])", section.str()) : fmt::format(" (known in [{}]: {})", section.str(), known));
      }
      std::string text;
      try {
        text = node_text(v);
      } catch (const Error&) {
        fail_usage("{}: {}: unsupported value type", where_of(path, v), key);
      }
      apply_setting(s, key, text, where_of(path, v));
    }
  }
}

namespace {
// publisher.crash_drill: one drill per process, armed by SIGUSR1.
const CrashDrill* process_drill(DrillPoint p) {
  if (p == DrillPoint::kNone) return nullptr;
  static CrashDrill drill(p);
  if (drill.point() != p)
    fail_usage("publisher.crash_drill {}: this process already drills at {}", drill_point_name(p),
               drill_point_name(drill.point()));
  arm_on_sigusr1(drill);
  return &drill;
}
}  // namespace

feed::PublisherConfig publisher_config(const Settings& s, uint64_t session) {
  if (s.pub.instruments > s.feed.max_instruments)
    fail_usage("publisher.instruments {} exceeds feed.max_instruments {}", s.pub.instruments, s.feed.max_instruments);
  // More than can be admitted would hold the feed until the wait times out.
  if (s.pub.wait_subscribers > s.control_server.max_clients)
    fail_usage("publisher.wait_subscribers (--wait-subscribers) {} exceeds control.max_clients {}, the subscribers "
               "admitted at most: the publisher would wait in vain (raise control.max_clients or wait for fewer)",
               s.pub.wait_subscribers, s.control_server.max_clients);
  feed::PublisherConfig pc;
  pc.channel = s.feed.channel;
  pc.session = session;
  pc.sender_id = s.pub.sender_id;
  pc.max_datagram = s.pub.max_datagram;  // 0: the medium's natural size (its configure() decides)
  // Boundaries set by the input leave no datagram to a timer.
  pc.boundaries = s.pub.boundaries;
  pc.flush_interval_ns = s.pub.boundaries == feed::Boundaries::kInput ? 0 : s.pub.flush_interval_ns;
  pc.heartbeat_interval_ns = s.pub.heartbeat_interval_ns;
  pc.retransmit_bytes = s.pub.retransmit_bytes;
  pc.crc = s.pub.crc;
  pc.authenticate_data = s.pub.authenticate_data;
  pc.pacing.mode = s.pub.pacing;
  pc.pacing.rate = s.pub.pacing_rate;
  pc.pacing.min_rate = s.pub.pacing_min_rate;
  pc.books = {s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
  pc.drill = process_drill(s.pub.crash_drill);
  // Over shm (auto is shm on one host) the ring is the retransmit history, sized and checked by the medium.
  const bool ring = s.feed.medium == MediumKind::kUdp || s.feed.medium == MediumKind::kVerbs;
  check_footprint(s, "publisher", ring ? s.pub.retransmit_bytes : 0, "publisher.retransmit_bytes");
  return pc;
}

feed::ControlConfig control_config(const Settings& s) {
  feed::ControlConfig cc;
  if (!s.pub.secrets.empty())
    cc.secrets = std::make_shared<const feed::PublisherSecrets>(
        with_context("publisher.secrets", [&] { return feed::PublisherSecrets::load(s.pub.secrets); }));
  if (!s.pub.data_secret_file.empty()) {
    if (s.pub.secrets.empty())
      fail_usage("publisher.data_secret_file '{}' keys the tags of a feed with secrets: set publisher.secrets too",
                 s.pub.data_secret_file);
    cc.data_secret = std::make_shared<const feed::ClientSecret>(with_context(
        "publisher.data_secret_file", [&] { return feed::ClientSecret::load(s.pub.data_secret_file); }));
  }
  return cc;
}

feed::SubscriberConfig subscriber_config(const Settings& s) {
  feed::SubscriberConfig sc;
  sc.channel = s.feed.channel;
  sc.sender_id = s.sub.sender_id;
  if (!s.sub.identity.empty() && s.sub.secret_file.empty())
    fail_usage("subscriber.identity '{}' needs subscriber.secret_file, the file with its secret", s.sub.identity);
  if (!s.sub.secret_file.empty())
    sc.secret = std::make_shared<const feed::ClientSecret>(with_context(
        "subscriber.secret_file", [&] { return feed::ClientSecret::load(s.sub.secret_file, s.sub.identity); }));
  sc.all_instruments = s.sub.all_instruments;
  sc.instruments = s.sub.instruments;
  sc.window_bytes = s.sub.window_bytes;
  sc.books = {s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
  check_footprint(s, "subscriber", s.sub.window_bytes, "subscriber.window_bytes");
  sc.verify_checksums = s.sub.verify;
  sc.capacity = s.sub.capacity;
  sc.publisher_timeout_ns = s.sub.publisher_timeout_ns;
  sc.pair_lag = s.sub.pair_lag;
  sc.confirm_ahead = s.sub.confirm_ahead;
  sc.authenticate_data = s.sub.authenticate_data;
  sc.request_timeout_ns = 100 * kNsPerMs;
  sc.max_datagram = wire::kMaxDatagram;
  return sc;
}

feed::ChannelMap channel_map(const Settings& s) {
  if (uint32_t{s.feed.channel} + s.feed.channels - 1 > 0xffff)
    fail_usage("feed.channel {} with feed.channels {} goes past channel id 65535", s.feed.channel, s.feed.channels);
  try {
    return feed::ChannelMap(s.feed.channels, s.feed.max_instruments, s.feed.channel_map);
  } catch (const Error& e) {
    throw UsageError(e);
  }
}

uint32_t publishing_threads(const Settings& s) {
  const uint32_t t = s.pub.threads ? s.pub.threads : s.pub.cpus.empty() ? 1 : static_cast<uint32_t>(s.pub.cpus.size());
  if (t > s.feed.channels)
    fail_usage("{} publishing threads{} for {} channels: a thread publishes at least one channel (raise feed.channels "
               "or lower publisher.threads)",
               t, s.pub.threads ? "" : fmt::format(" (one per publisher.cpus entry)"), s.feed.channels);
  if (!s.pub.cpus.empty() && s.pub.cpus.size() != t)
    fail_usage("publisher.cpus lists {} CPUs for {} publishing threads: one CPU per thread", s.pub.cpus.size(), t);
  return t;
}

uint64_t pick_session(const Settings& s) { return s.pub.session ? s.pub.session : feed::new_session_id(); }

book::GeneratorConfig generator_config(const Settings& s) {
  book::GeneratorConfig gc;
  gc.seed = s.pub.seed;
  gc.instruments = s.pub.instruments;
  gc.max_orders = std::min<uint32_t>(120, s.feed.max_levels);
  gc.target_orders = std::min<uint32_t>(40, gc.max_orders);
  return gc;
}

std::string next_group(const std::string& group, uint32_t index, std::string_view key) {
  try {
    return media::channel_group(group, index);
  } catch (const Error& e) {
    fail_usage("{} {}", key, e.what());
  }
}

record::FrameAddress recording_address(const Settings& s) {
  if ((s.feed.medium == MediumKind::kShm || s.feed.medium == MediumKind::kAuto) && s.shm.max_datagram > record::kMaxPayload)
    fail("record: shm.max_datagram {} does not fit an IPv4/UDP frame (at most {}); lower it on the publisher",
         s.shm.max_datagram, record::kMaxPayload);
  record::FrameAddress a;
  uint16_t port = a.group_port;
  // Every medium's frames go to udp.group (239.77.1.1:7470 by default) but verbs, whose group is its own.
  if (!record::parse_ipv4(s.udp.group, a.group_ip, &port))
    fail_usage("record: udp.group '{}' is not IPv4 GROUP:PORT", s.udp.group);
  a.group_port = a.source_port = port;
  if (s.feed.medium == MediumKind::kVerbs) {
    if (!record::parse_ipv4(s.verbs.group, a.group_ip)) fail_usage("record: verbs.group '{}' is not IPv4", s.verbs.group);
    if (!s.verbs.control_ip.empty()) (void)record::parse_ipv4(s.verbs.control_ip, a.source_ip);
  }
  return a;
}

media::fault::FaultProfile injected_faults(const Settings& s, uint64_t seed) {
  media::fault::FaultProfile f;
  f.seed = seed;
  f.loss = s.sub.inject_loss;
  return f;
}

std::vector<SettingInfo> known_settings() {
  const Settings defaults;
  std::vector<SettingInfo> v;
  for (const auto& [k, e] : setting_keys()) v.push_back({k, e.type, e.help, e.get(defaults)});
  return v;
}

SettingInfo setting_info(const std::string& key) {
  const auto it = setting_keys().find(key);
  if (it == setting_keys().end()) fail("unknown setting '{}'", key);
  return {key, it->second.type, it->second.help, it->second.get(Settings{})};
}

}  // namespace mdcast::settings

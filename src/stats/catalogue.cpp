// The library's sections. Only the counter lists of the media headers are
// used here (constexpr kInfo), nothing that would need their libraries, so
// the catalogue lives in mdcast_feed beside the counters file it explains.
#include "mdcast/stats/catalogue.hpp"

#include "mdcast/feed/counters.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/media/stream/stream_server.hpp"
#include "mdcast/media/udp/udp_medium.hpp"
#include "mdcast/media/udp/udp_sink.hpp"
#include "mdcast/media/udp/udp_source.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"

namespace mdcast::stats {
namespace {

using sv = std::string_view;

// Levels, not totals: what a dashboard plots as is and never rates.
constexpr sv kPubGauges[] = {"last_sequence", "pacing_rate"};
constexpr sv kCtlGauges[] = {"clients_connected", "slowest_capacity", "longest_poll_ns", "auth_delay_ns",
                             "snapshot_streams", "snapshot_cache_bytes"};
constexpr sv kSubGauges[] = {"next_sequence", "highest_sequence"};
constexpr sv kStreamGauges[] = {"clients", "unadmitted", "queued_bytes", "io_uring"};
constexpr sv kDoorGauges[] = {"pending"};
constexpr sv kVerbsSinkGauges[] = {"send_only_join"};
constexpr sv kVerbsRxGauges[] = {"posted_low"};
constexpr sv kVerbsServerGauges[] = {"clients_connected"};
constexpr std::span<const sv> kNone{};

template <class C>
CatalogueSection section(sv prefix, sv role, sv medium, sv source, std::span<const sv> gauges = kNone) {
  return {prefix, role, medium, source, C::kInfo, gauges};
}

bool ends_with(sv s, sv suffix) { return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix; }

}  // namespace

Unit unit_of(std::string_view n) noexcept {
  if (ends_with(n, "_ns")) return Unit::kNanoseconds;
  if (ends_with(n, "_us")) return Unit::kMicroseconds;
  if (ends_with(n, "_ms")) return Unit::kMilliseconds;
  if (n == "bytes" || ends_with(n, "_bytes")) return Unit::kBytes;
  return Unit::kNone;
}

std::string_view to_string(MetricType t) noexcept { return t == MetricType::kGauge ? "gauge" : "counter"; }

Catalogue Catalogue::library() {
  namespace udp = media::udp;
  namespace verbs = media::verbs;
  namespace mem = media::mem;
  constexpr sv kPub = "publisher", kSub = "subscriber";
  Catalogue c;
  // The feed engines (runners.cpp: the same for every medium).
  c.add(section<feed::PublisherCounters>(kPublisherPrefix, kPub, "", "feed::PublisherCounters", kPubGauges));
  c.add(section<feed::ControlCounters>(kControlPrefix, kPub, "", "feed::ControlCounters", kCtlGauges));
  c.add(section<feed::SubscriberCounters>(kSubscriberPrefix, kSub, "", "feed::SubscriberCounters", kSubGauges));
  // Each medium's counter_groups(), under the prefixes it gives them.
  c.add(section<media::ControlServerStats>("control", kPub, "shm", "media::ControlServerStats", kStreamGauges));
  c.add(section<media::shm::ReaderCounters>("shm", kSub, "shm", "media::shm::ReaderCounters"));
  // The one control endpoint of a publisher of several channels.
  c.add(section<media::FrontDoorStats>("door", kPub, "shm", "media::FrontDoorStats", kDoorGauges));
  c.add(section<media::FrontDoorStats>("door", kPub, "udp", "media::FrontDoorStats", kDoorGauges));
  c.add(section<verbs::VerbsDoorCounters>("door", kPub, "verbs", "media::verbs::VerbsDoorCounters"));
  c.add(section<udp::SinkCounters>("udp", kPub, "udp", "media::udp::SinkCounters"));
  c.add(section<media::ControlServerStats>("control", kPub, "udp", "media::ControlServerStats", kStreamGauges));
  c.add(section<udp::SourceCounters>("udp", kSub, "udp", "media::udp::SourceCounters"));
  c.add(section<udp::SubscriberCounters>("udp", kSub, "udp", "media::udp::SubscriberCounters"));
  c.add(section<verbs::SinkCounters>("sink", kPub, "verbs", "media::verbs::SinkCounters", kVerbsSinkGauges));
  c.add(section<verbs::ServerCounters>("server", kPub, "verbs", "media::verbs::ServerCounters", kVerbsServerGauges));
  c.add(section<verbs::ReceiverCounters>("rx", kSub, "verbs", "media::verbs::ReceiverCounters", kVerbsRxGauges));
  c.add(section<verbs::ClientCounters>("client", kSub, "verbs", "media::verbs::ClientCounters"));
  c.add(section<mem::BusCounters>("bus", kPub, "mem", "media::mem::BusCounters"));
  c.add(section<mem::ControlCounters>("control", kPub, "mem", "media::mem::ControlCounters"));
  c.add(section<mem::EndpointCounters>("mem", kSub, "mem", "media::mem::EndpointCounters"));
  // The fault injector every subscriber runs through (FaultyMedium).
  c.add(section<media::fault::FaultCounters>("fault", kSub, "", "media::fault::FaultCounters"));
  return c;
}

std::optional<MetricInfo> Catalogue::find(std::string_view role, std::string_view medium,
                                          std::string_view label) const noexcept {
  const size_t dot = label.find('.');
  if (dot == sv::npos) return std::nullopt;
  const sv prefix = label.substr(0, dot), name = label.substr(dot + 1);
  if (auto m = find_exact(role, medium, prefix, name)) return m;
  for (const auto& [r, as] : aliases_)
    if (r == role)
      if (auto m = find_exact(as, medium, prefix, name)) return m;
  return std::nullopt;
}

std::optional<MetricInfo> Catalogue::find_exact(std::string_view role, std::string_view medium, std::string_view prefix,
                                                std::string_view name) const noexcept {
  for (const auto& s : sections_) {
    if (s.prefix != prefix || (!s.role.empty() && s.role != role) || (!s.medium.empty() && s.medium != medium))
      continue;
    for (const auto& c : s.counters) {
      if (c.name != name) continue;
      MetricInfo m;
      m.help = c.help;
      m.unit = unit_of(name);
      m.section = &s;
      for (const auto& g : s.gauges)
        if (g == name) m.type = MetricType::kGauge;
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace mdcast::stats

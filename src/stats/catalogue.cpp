// The feed engines' sections. Only constexpr counter lists (kInfo) are used
// here, so the catalogue lives in mdcast_feed beside the counters file it
// explains; the media's sections come from their folders through the list
// (settings::counter_catalogue).
#include "mdcast/stats/catalogue.hpp"

#include "mdcast/feed/counters.hpp"
#include "mdcast/media/catalogue.hpp"
#include "mdcast/media/fault/fault.hpp"

namespace mdcast::stats {
namespace {

using sv = std::string_view;

// Levels, not totals: what a dashboard plots as is and never rates.
constexpr sv kPubGauges[] = {"last_sequence", "pacing_rate"};
constexpr sv kCtlGauges[] = {"clients_connected", "slowest_capacity", "subscribers_unlisted", "longest_poll_ns", "auth_delay_ns",
                             "snapshot_streams", "snapshot_cache_bytes"};
constexpr sv kSubGauges[] = {"next_sequence", "highest_sequence", "longest_data_gap_ns"};

bool ends_with(sv s, sv suffix) { return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix; }

}  // namespace

Unit unit_of(std::string_view n) noexcept {
  if (ends_with(n, "_ns")) return Unit::kNanoseconds;
  if (ends_with(n, "_us")) return Unit::kMicroseconds;
  if (ends_with(n, "_ms")) return Unit::kMilliseconds;
  if (n == "bytes" || ends_with(n, "_bytes")) return Unit::kBytes;
  return Unit::kNone;
}

std::string_view to_string(MetricType t) noexcept {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

Catalogue Catalogue::engines() {
  using media::catalogue_section, media::kPublisherRole, media::kSubscriberRole;
  static constexpr CatalogueSection kSections[] = {
      // The feed engines (the same for every medium).
      catalogue_section<feed::PublisherCounters>(kPublisherPrefix, kPublisherRole, "", "feed::PublisherCounters",
                                                 kPubGauges),
      catalogue_section<feed::ControlCounters>(kControlPrefix, kPublisherRole, "", "feed::ControlCounters", kCtlGauges),
      catalogue_section<feed::SubscriberCounters>(kSubscriberPrefix, kSubscriberRole, "", "feed::SubscriberCounters",
                                                  kSubGauges),
      // The fault injector every subscriber runs through (FaultyMedium).
      catalogue_section<media::fault::FaultCounters>("fault", kSubscriberRole, "", "media::fault::FaultCounters"),
  };
  Catalogue c;
  c.add(kSections);
  return c;
}

std::optional<MetricInfo> Catalogue::find(std::string_view role, std::string_view medium,
                                          std::string_view label) const noexcept {
  return find_in(sections_, role, medium, label);
}

std::optional<MetricInfo> Catalogue::find_histogram(std::string_view role, std::string_view medium,
                                                    std::string_view label) const noexcept {
  auto m = find_in(histograms_, role, medium, label);
  if (m) m->type = MetricType::kHistogram;
  return m;
}

std::optional<MetricInfo> Catalogue::find_in(const std::vector<CatalogueSection>& list, std::string_view role,
                                             std::string_view medium, std::string_view label) const noexcept {
  const size_t dot = label.find('.');
  if (dot == sv::npos) return std::nullopt;
  const sv prefix = label.substr(0, dot), name = label.substr(dot + 1);
  if (auto m = find_exact(list, role, medium, prefix, name)) return m;
  for (const auto& [r, as] : aliases_)
    if (r == role)
      if (auto m = find_exact(list, as, medium, prefix, name)) return m;
  return std::nullopt;
}

std::optional<MetricInfo> Catalogue::find_exact(const std::vector<CatalogueSection>& list, std::string_view role,
                                                std::string_view medium, std::string_view prefix,
                                                std::string_view name) noexcept {
  for (const auto& s : list) {
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

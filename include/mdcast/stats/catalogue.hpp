// What every counter a counters file can hold means: its help text, whether
// it is a counter (only grows) or a gauge (a level: last_sequence, clients
// connected, a latency percentile), and its unit. Counters files store only
// labels ("section.counter"), so an exporter (`mdcast stat --json`,
// `--prometheus`, or an application's own) looks each label up here.
//
// The catalogue is built from the counter structs' own kInfo (the names and
// help texts of MDCAST_DEFINE_COUNTER_STRUCT), never from a second list of
// names; all it adds is which section prefix a struct is written under, by
// which role and medium, and which of its counters are gauges. The feed
// engines' sections are here (engines()); each medium's come from its own
// folder (media/<name>/<name>_catalogue.hpp), and the list of media adds
// them: settings::counter_catalogue() (settings/media.hpp) is the whole
// library's catalogue.
//
// Histograms (a counters file's, CountersFile::publish) are listed apart:
// add_histograms() takes a section whose "counters" name the histograms
// ("latency_ns" under "app"), and find_histogram() looks them up, typed
// kHistogram.
//
// A prefix alone does not name one struct: "control" is the stream control
// server's under shm and udp but the in-memory medium's under mem, and "udp"
// is the sink's in a publisher and the source's in a subscriber. A lookup
// therefore takes the file's role and medium too.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/media/catalogue.hpp"

namespace mdcast::stats {

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };

// From the counter's name: "_ns", "_us", "_ms" are durations, "_bytes" (or a
// counter named "bytes") sizes. Exporters convert durations to seconds.
enum class Unit : uint8_t { kNone, kBytes, kNanoseconds, kMicroseconds, kMilliseconds };

// The section prefixes the library's feed engines are written under by
// `mdcast publish|subscribe` (apps/mdcast/runners.cpp); an application that
// writes its own counters files should use the same ones so that dashboards
// and alerts work for both.
inline constexpr std::string_view kPublisherPrefix = "pub";   // feed::PublisherCounters
inline constexpr std::string_view kControlPrefix = "ctl";     // feed::ControlCounters
inline constexpr std::string_view kSubscriberPrefix = "sub";  // feed::SubscriberCounters

using media::CatalogueSection;

struct MetricInfo {
  std::string_view help;
  MetricType type = MetricType::kCounter;
  Unit unit = Unit::kNone;
  const CatalogueSection* section = nullptr;
};

[[nodiscard]] Unit unit_of(std::string_view counter_name) noexcept;
[[nodiscard]] std::string_view to_string(MetricType t) noexcept;

class Catalogue {
 public:
  Catalogue() = default;
  // The sections every medium's processes write: the feed engines under
  // kPublisherPrefix/kControlPrefix/kSubscriberPrefix, the fault injector's
  // under "fault". A medium's own are added from its counter_catalogue().
  [[nodiscard]] static Catalogue engines();

  // Adds an application's own section, or a medium's (sections are kept by
  // reference: counters and gauges must outlive the catalogue; kInfo and
  // static arrays do).
  void add(const CatalogueSection& s) { sections_.push_back(s); }
  void add(std::span<const CatalogueSection> s) { sections_.insert(sections_.end(), s.begin(), s.end()); }

  // The label "prefix.name" of a file written by `role` over `medium`;
  // nullopt when no section of this catalogue explains it (a file of
  // another mdcast version, or not written by mdcast at all).
  [[nodiscard]] std::optional<MetricInfo> find(std::string_view role, std::string_view medium,
                                               std::string_view label) const noexcept;
  [[nodiscard]] std::span<const CatalogueSection> sections() const noexcept { return sections_; }

  // Histograms: the section's counters name them; its gauges are ignored.
  void add_histograms(const CatalogueSection& s) { histograms_.push_back(s); }
  [[nodiscard]] std::optional<MetricInfo> find_histogram(std::string_view role, std::string_view medium,
                                                         std::string_view label) const noexcept;
  [[nodiscard]] std::span<const CatalogueSection> histogram_sections() const noexcept { return histograms_; }

  // Files of `role` also hold the sections of `as` (an application's
  // process that is a subscriber and more, like `mdcast record`): a label
  // not found for `role` is looked up for `as`.
  void alias_role(std::string_view role, std::string_view as) { aliases_.emplace_back(role, as); }

 private:
  [[nodiscard]] std::optional<MetricInfo> find_in(const std::vector<CatalogueSection>& list, std::string_view role,
                                                  std::string_view medium, std::string_view label) const noexcept;
  [[nodiscard]] static std::optional<MetricInfo> find_exact(const std::vector<CatalogueSection>& list,
                                                            std::string_view role, std::string_view medium,
                                                            std::string_view prefix, std::string_view name) noexcept;

  std::vector<CatalogueSection> sections_;
  std::vector<CatalogueSection> histograms_;
  std::vector<std::pair<std::string_view, std::string_view>> aliases_;
};

}  // namespace mdcast::stats

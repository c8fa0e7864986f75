// The media this build knows, by name: an application that takes its medium
// from settings (a TOML file, flags: settings.hpp) binds it here, and is a
// template over an entry's types from then on. `mdcast publish|subscribe|
// demo|bench` are such templates; nothing else in them names a medium.
//
//   settings::with_medium(s.feed.medium, [&](auto entry) {
//     using E = decltype(entry);
//     auto medium = E::publisher(s, session);   // std::unique_ptr<E::Publisher>
//     ...
//   });
//
// An entry (settings/media/<name>.hpp, the medium's binding) holds its
// medium's types (Publisher, Subscriber, and Door: the one control endpoint
// a publisher of several channels listens on), how the settings map onto
// its options, how channel index k of a feed differs, and what only the
// medium can tell the rest of the library: the doctor its rules
// (doctor_facts), `stat --clean` the rings it leaves (left_rings). This
// file is the list of them. Its binding is the one file outside a medium's
// folder that names it (besides the bench's raw baselines;
// scripts/check-medium-names.sh keeps it so).
// Adding a medium: its folder (media/<name>/, its counter sections in
// <name>_catalogue.hpp), its settings and keys (settings/media/
// <name>_settings.hpp, src/settings/media/<name>_keys.cpp), its binding,
// and one line each in with_medium(), for_each_medium() and
// counter_catalogue() below and in settings.hpp's and keys.cpp's lists
// (docs/architecture.md, "Adding a medium").
#pragma once

#include <string>

#include "mdcast/core/error.hpp"
#include "mdcast/media/mem/mem_catalogue.hpp"
#include "mdcast/record/recorder.hpp"
#include "mdcast/runtime/conflate.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/relay.hpp"
#include "mdcast/settings/media/binding.hpp"
#include "mdcast/settings/media/shm.hpp"
#include "mdcast/settings/media/udp.hpp"
#include "mdcast/settings/media/verbs.hpp"
#include "mdcast/settings/settings.hpp"
#include "mdcast/stats/catalogue.hpp"
#include "mdcast/stats/clean.hpp"

namespace mdcast::settings {

// The settings of channel index k of the feed: its channel id, and the
// medium's own addresses (E::to_channel). A publisher's channels share one
// control endpoint (E::Door), so the control address is the feed's.
template <class E>
Settings channel_settings(const Settings& s, uint32_t index) {
  Settings c = s;
  c.feed.channel = static_cast<uint16_t>(s.feed.channel + index);
  c.feed.channel_index = index;
  E::to_channel(c, index);
  return c;
}

// "auto": on one host shared memory beats any network medium; verbs and UDP
// reach other hosts and are chosen explicitly.
[[nodiscard]] inline MediumKind resolve_medium(MediumKind m) noexcept {
  return m == MediumKind::kAuto ? MediumKind::kShm : m;
}

// Calls f(Entry{}) with the registry entry of medium m (after resolving
// "auto"). Throws Error for a medium this build does not have.
template <class F>
decltype(auto) with_medium(MediumKind m, F&& f) {
  switch (resolve_medium(m)) {
    case MediumKind::kShm: return f(ShmEntry{});
    case MediumKind::kUdp: return f(UdpEntry{});
#ifdef MDCAST_HAVE_VERBS
    case MediumKind::kVerbs: return f(VerbsEntry{});
#endif
    default: break;
  }
  fail("medium '{}' is not available in this build (available: shm, udp{})", to_string(m),
#ifdef MDCAST_HAVE_VERBS
       ", verbs"
#else
       ""
#endif
  );
}

// Calls f(Entry{}) for each medium of this build, in with_medium()'s order.
template <class F>
void for_each_medium(F&& f) {
  f(ShmEntry{});
  f(UdpEntry{});
#ifdef MDCAST_HAVE_VERBS
  f(VerbsEntry{});
#endif
}

// What `mdcast stat --clean` removes of a dead publisher beyond its
// counters file: the rings of a medium that leaves them (stats/clean.hpp).
[[nodiscard]] inline stats::CleanOptions clean_options() {
  stats::CleanOptions o;
  for_each_medium([&](auto entry) {
    using E = decltype(entry);
    if constexpr (requires { E::left_rings(); }) o.rings = E::left_rings();
  });
  return o;
}

// Every counter a counters file of this library can hold: the engines' and
// each medium's (its folder's counter_catalogue()). Media this build lacks
// (verbs without rdma-core) and the in-memory one of the tests are here too,
// so that any mdcast process's file is explained.
[[nodiscard]] inline stats::Catalogue counter_catalogue() {
  stats::Catalogue c = stats::Catalogue::engines();
  c.add(media::shm::counter_catalogue());
  c.add(media::udp::counter_catalogue());
  c.add(media::verbs::counter_catalogue());
  c.add(media::mem::counter_catalogue());
  // What the library's runtimes add: every publisher's run, a recorder's
  // files, a relay's forwarding or conflating (it publishes downstream what
  // it subscribes to upstream, "sub").
  c.add({"run", "publisher", "", "runtime::RunCounters", runtime::RunCounters::kInfo, runtime::kRunGauges});
  c.alias_role("recorder", "subscriber");
  c.add({"rec", "recorder", "", "record::RecordCounters", record::RecordCounters::kInfo, {}});
  c.alias_role("relay", "publisher");
  c.alias_role("relay", "subscriber");
  c.add({"relay", "relay", "", "runtime::RelayCounters", runtime::RelayCounters::kInfo, runtime::kRelayGauges});
  c.add({"conflate", "relay", "", "runtime::ConflateCounters", runtime::ConflateCounters::kInfo, {}});
  return c;
}

}  // namespace mdcast::settings

// The runtimes' plans from the settings: what `mdcast publish`, `replay`,
// `relay`, `subscribe` and `record` hand runtime::PublisherRuntime and
// runtime::SubscriberRuntime, and what an application configured by the
// same TOML files hands them. Each throws what publisher_config,
// subscriber_config and channel_map throw for settings that cannot run.
#pragma once

#include <cstdint>
#include <string_view>

#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"
#include "mdcast/settings/settings.hpp"

namespace mdcast::settings {

// When a subscriber gives up: subscriber.duration, .wait, .give_up, and feed.stop.
[[nodiscard]] runtime::SubscriberLimits subscriber_limits(const Settings& s);
// A subscriber of the feed's channels on `medium` (the counters file's word for it).
[[nodiscard]] runtime::SubscriberPlan subscriber_plan(const Settings& s, std::string_view medium);
// A publisher of session `session` on `medium`: the channels, publishing
// threads and their CPUs, the engine and control plane, the subscribers
// waited for, the linger, feed.stop, and a counters file named for the feed.
[[nodiscard]] runtime::PublisherPlan publisher_plan(const Settings& s, uint64_t session, std::string_view medium);

}  // namespace mdcast::settings

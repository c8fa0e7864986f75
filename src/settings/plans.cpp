#include "mdcast/settings/plans.hpp"

#include <string>

namespace mdcast::settings {

runtime::SubscriberLimits subscriber_limits(const Settings& s) {
  return {s.feed.stop, s.sub.duration_ns, s.sub.wait_ns, s.sub.give_up_ns};
}

runtime::SubscriberPlan subscriber_plan(const Settings& s, std::string_view medium) {
  runtime::SubscriberPlan plan;
  plan.map = channel_map(s);
  plan.engine = subscriber_config(s);
  plan.agent = {s.feed.control_poll_ns, s.feed.idle};
  plan.agent.idle_params = s.feed.idle_params;
  plan.limits = subscriber_limits(s);
  plan.first_channel = s.feed.channel;
  plan.name = s.feed.name;
  plan.medium = medium;
  return plan;
}

runtime::PublisherPlan publisher_plan(const Settings& s, uint64_t session, std::string_view medium) {
  runtime::PublisherPlan plan;
  plan.map = channel_map(s);
  plan.threads = publishing_threads(s);
  plan.cpus = s.pub.cpus;
  plan.engine = publisher_config(s, session);  // refuses bad settings before any thread starts
  plan.control = control_config(s);
  plan.agent = {s.feed.control_poll_ns};
  plan.wait_subscribers = s.pub.wait_subscribers;
  plan.wait_subscribers_ns = s.pub.wait_subscribers_ns;
  plan.linger_ns = s.pub.linger_ns;
  plan.stop = s.feed.stop;
  plan.counters = {"publisher", s.feed.name, std::string(medium), {}};
  return plan;
}

}  // namespace mdcast::settings

// One subscriber over the in-memory medium behind the fault injector, as the
// agent tests drive it: medium, interceptor, recorder and agent, declared in
// teardown order (the agent first, the medium last).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "recorder.hpp"

namespace mdcast::test {

using MemSubMedium = media::fault::FaultyMedium<media::mem::SubscriberMedium>;
using MemSubAgent = feed::SubscriberAgent<MemSubMedium, Recorder>;

struct MemSub {
  MemSub(media::mem::PublisherMedium& pub, const media::fault::FaultProfile& f, std::string n,
         const feed::SubscriberConfig& cfg, uint32_t instruments, const feed::SubscriberAgentOptions& opts)
      : name(std::move(n)), medium(pub), faulty(medium, f), rec(instruments), agent(faulty, cfg, rec, nullptr, opts) {
    agent.start();
  }
  std::string name;
  media::mem::SubscriberMedium medium;
  MemSubMedium faulty;
  Recorder rec;
  MemSubAgent agent;
};

}  // namespace mdcast::test

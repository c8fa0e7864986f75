// A feed over several channels (feed/channels.hpp), driven as one:
//
//   PublisherChannels<M>     the channels one publishing thread owns: a
//                            PublisherAgent per channel, each over its own
//                            medium; publish() routes a message to its
//                            instrument's channel (one table load, no
//                            virtual call), do_work(now) runs every channel's
//                            duty cycle. feed::run_paced drives it as it
//                            drives one agent.
//   SubscriberChannels<M, H> one subscriber over the channels its filter
//                            needs: a SubscriberAgent per channel, each with
//                            its own medium and exact-delivery state, polled
//                            in turn on one thread into one handler;
//                            instruments added at run time join their
//                            channel (opened then) and recover there.
//
//   feed::ChannelMap map(4, max_instruments);                 // by the stable hash
//   feed::PublisherChannels<media::shm::PublisherMedium> pub(map);
//   for (uint32_t k : {0, 1, 2, 3}) pub.add(k, open_medium(k), cfg_for(k), control);
//   run_paced(pub, source, pace, hooks);   // or pub.publish(m, now) / pub.do_work(now)
//
// Threading: each object on one thread. Several publishing threads each own
// a PublisherChannels over their own channels (channels_per_thread); nothing
// is shared between them but the map, which is read-only.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "mdcast/core/error.hpp"
#include "mdcast/feed/channels.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"

namespace mdcast::feed {

template <media::PublisherMedium Medium>
class PublisherChannels {
 public:
  using Agent = PublisherAgent<Medium>;
  using Sink = typename Medium::Sink;

  explicit PublisherChannels(ChannelMap map) : map_(std::move(map)) { route_.fill(nullptr); }
  PublisherChannels(const PublisherChannels&) = delete;
  PublisherChannels& operator=(const PublisherChannels&) = delete;

  // Adopts channel index `channel`'s medium and publishes it with cfg (whose
  // channel must be the wire id of that index). Setup; throws Error.
  Agent& add(uint32_t channel, std::unique_ptr<Medium> medium, const PublisherConfig& cfg,
             const ControlConfig& control = {}, PublisherAgentCounters where = {}, PublisherAgentOptions opts = {}) {
    if (channel >= map_.count()) fail("channel index {} of a feed with {} channels", channel, map_.count());
    if (route_[channel]) fail("channel index {} added twice", channel);
    auto& c = channels_.emplace_back();
    c.index = channel;
    c.medium = std::move(medium);
    c.agent = std::make_unique<Agent>(*c.medium, cfg, control, where, opts);
    route_[channel] = c.agent.get();
    return *c.agent;
  }

  // ---- data path (run_paced's surface)
  PublishResult publish(wire::Message& m, uint64_t now) noexcept {
    Agent* a = route_[map_.of(m.instrument)];
    return a ? a->publish(m, now) : PublishResult::kWrongChannel;
  }
  static constexpr bool kTakesBatches = media::BatchSink<Sink>;
  PublishResult stage(wire::Message& m, uint64_t now) noexcept {
    Agent* a = route_[map_.of(m.instrument)];
    return a ? a->stage(m, now) : PublishResult::kWrongChannel;
  }
  void send_committed(uint64_t now) noexcept {
    for (auto& c : channels_) c.agent->send_committed(now);
  }
  [[nodiscard]] uint64_t unsent() const noexcept {
    uint64_t n = 0;
    for (const auto& c : channels_) n += c.agent->unsent();
    return n;
  }
  void flush(uint64_t now) noexcept {
    for (auto& c : channels_) c.agent->flush(now);
  }
  void seal(uint64_t now) noexcept {
    for (auto& c : channels_) c.agent->seal(now);
  }
  [[nodiscard]] bool has_open() const noexcept {
    for (const auto& c : channels_)
      if (c.agent->core().has_open()) return true;
    return false;
  }
  // All channels of a publisher share the engine configuration but for the channel id.
  [[nodiscard]] uint64_t flush_interval_ns() const noexcept {
    return channels_.empty() ? 0 : channels_.front().agent->core().config().flush_interval_ns;
  }

  // ---- duty cycle
  size_t do_work(uint64_t now) {
    size_t work = 0;
    for (auto& c : channels_) work += c.agent->do_work(now);
    return work;
  }
  // Every channel's end of session; false while any medium holds back.
  bool end_session(uint64_t now) noexcept {
    bool all = true;
    for (auto& c : channels_) all &= c.agent->end_session(now);
    return all;
  }
  // PublisherAgent::linger over every channel: until no channel has had a
  // control client for quiet_ns, until_ns, or stop().
  template <class Stop>
  void linger(uint64_t until_ns, uint64_t quiet_ns, uint64_t nap_ns, Stop&& stop) {
    linger_rounds(until_ns, quiet_ns, nap_ns, stop, [this](uint64_t now) { return serve_recovery(now); });
  }
  // One round of the linger: every channel's timers and control plane, after
  // the end of session; returns the control clients still connected.
  size_t serve_recovery(uint64_t now) {
    size_t clients = 0;
    for (auto& c : channels_) {
      c.agent->publisher().poll(now);
      c.agent->poll_control(now);
      clients += c.agent->clients();
    }
    return clients;
  }

  // ---- what it is
  [[nodiscard]] const ChannelMap& map() const noexcept { return map_; }
  [[nodiscard]] size_t size() const noexcept { return channels_.size(); }
  [[nodiscard]] uint32_t index(size_t k) const noexcept { return channels_[k].index; }
  [[nodiscard]] Agent& agent(size_t k) noexcept { return *channels_[k].agent; }
  [[nodiscard]] const Agent& agent(size_t k) const noexcept { return *channels_[k].agent; }
  [[nodiscard]] Medium& medium(size_t k) noexcept { return *channels_[k].medium; }
  // The agent publishing channel index `channel`; null when not this one's.
  [[nodiscard]] Agent* find(uint32_t channel) noexcept { return channel < kMaxChannels ? route_[channel] : nullptr; }
  [[nodiscard]] size_t clients() const noexcept {
    size_t n = 0;
    for (const auto& c : channels_) n += c.agent->clients();
    return n;
  }
  [[nodiscard]] size_t subscribed_clients() const noexcept {
    size_t n = 0;
    for (const auto& c : channels_) n += c.agent->subscribed_clients();
    return n;
  }

 private:
  struct Channel {  // teardown: the agent, then the medium it runs over
    uint32_t index = 0;
    std::unique_ptr<Medium> medium;
    std::unique_ptr<Agent> agent;
  };
  ChannelMap map_;
  std::vector<Channel> channels_;
  std::array<Agent*, kMaxChannels> route_{};
};

template <media::SubscriberMedium Medium, SubscriberHandler Handler>
class SubscriberChannels {
 public:
  using Agent = SubscriberAgent<Medium, Handler>;
  // Opens channel index k's medium (control code: may allocate, throws
  // Error). A shared_ptr so a medium can bring what it wraps along (an
  // aliasing pointer to an interceptor over its medium, say).
  using Open = std::function<std::shared_ptr<Medium>(uint32_t channel)>;
  // Where channel index k's counters live (null: the engine owns them).
  using CountersAt = std::function<SubscriberCounters*(uint32_t channel)>;
  // Which handler channel index k delivers to (one for all, usually).
  using HandlerAt = std::function<Handler&(uint32_t channel)>;

  // cfg is the whole subscription: its channel is the feed's base channel
  // (index 0), its filter over every channel.
  SubscriberChannels(ChannelMap map, SubscriberConfig cfg, Handler& handler, Open open, CountersAt counters = {},
                     SubscriberAgentOptions opts = {})
      : SubscriberChannels(std::move(map), std::move(cfg), HandlerAt([&handler](uint32_t) -> Handler& { return handler; }),
                           std::move(open), std::move(counters), opts) {}
  SubscriberChannels(ChannelMap map, SubscriberConfig cfg, HandlerAt handlers, Open open, CountersAt counters = {},
                     SubscriberAgentOptions opts = {})
      : map_(std::move(map)), cfg_(std::move(cfg)), handler_at_(std::move(handlers)), open_(std::move(open)),
        counters_(std::move(counters)), opts_(opts), idle_(opts.idle, opts.idle_params) {
    if (uint32_t{cfg_.channel} + map_.count() - 1 > 0xffff)
      fail("feed.channel {} with {} channels goes past channel id 65535", cfg_.channel, map_.count());
  }
  SubscriberChannels(const SubscriberChannels&) = delete;
  SubscriberChannels& operator=(const SubscriberChannels&) = delete;

  // The channels the filter needs: every channel for all instruments, else
  // those its instruments are on.
  [[nodiscard]] std::vector<uint32_t> needed() const {
    if (cfg_.all_instruments) {
      std::vector<uint32_t> v(map_.count());
      for (uint32_t k = 0; k < v.size(); ++k) v[k] = k;
      return v;
    }
    return map_.channels_of(cfg_.instruments);
  }
  // Joins them: all built, then all started together (build_all).
  void start() {
    std::vector<Joining> joining;
    for (uint32_t k : needed())
      if (!find(k))
        joining.push_back({k, cfg_.all_instruments ? std::vector<uint32_t>{} : map_.select(cfg_.instruments, k)});
    start_all(build_all(std::move(joining)));
  }

  // One duty cycle of every channel joined, at `now` (SubscriberAgent::do_work).
  // Returns datagrams taken.
  size_t do_work(uint64_t now) {
    size_t n = 0;
    for (auto& c : channels_) n += c.agent->do_work(now);
    return n;
  }
  void idle(size_t n) noexcept {
    if (channels_.size() == 1) return channels_.front().agent->idle(n);  // it may sleep in its medium
    if (n)
      idle_.reset();
    else
      idle_.idle();
  }
  // SubscriberAgent::run over every channel: hooks.on_control_round(now)
  // after any channel's control round; true when every channel's session ended.
  template <class Hooks>
  bool run(Hooks& hooks) {
    uint64_t seen = control_rounds();
    SpinClock clock(opts_.control_poll_ns == 0);
    size_t n = 0;
    for (;;) {
      n = do_work(clock.now(n));
      if (const uint64_t r = control_rounds(); r != seen) {
        seen = r;
        if (finished()) return true;
        if (!hooks.on_control_round(monotonic_ns())) return false;
      }
      idle(n);
    }
  }

  // Adds instruments to the filter: each recovers on its channel, which is
  // joined now (opened, subscribed, its history recovered) if it was not.
  void add_instruments(std::span<const uint32_t> ids, uint64_t now) {
    std::vector<Joining> joining;
    std::vector<std::pair<Agent*, std::vector<uint32_t>>> joined;
    for (uint32_t k : map_.channels_of(ids)) {
      std::vector<uint32_t> mine = map_.select(ids, k);
      if (Agent* a = find(k))
        joined.emplace_back(a, std::move(mine));
      else
        joining.push_back({k, std::move(mine)});
    }
    std::vector<Channel> built = build_all(std::move(joining));  // first: it may throw
    for (auto& [a, mine] : joined) a->subscriber().add_instruments(mine, now);
    start_all(std::move(built));
    if (!cfg_.all_instruments) {
      cfg_.instruments.insert(cfg_.instruments.end(), ids.begin(), ids.end());
      std::sort(cfg_.instruments.begin(), cfg_.instruments.end());
      cfg_.instruments.erase(std::unique(cfg_.instruments.begin(), cfg_.instruments.end()), cfg_.instruments.end());
    }
  }

  // Every channel joined has ended its session and delivered all of it.
  [[nodiscard]] bool finished() const noexcept {
    if (channels_.empty()) return false;
    for (const auto& c : channels_)
      if (!c.agent->finished()) return false;
    return true;
  }
  [[nodiscard]] uint64_t control_rounds() const noexcept {
    uint64_t n = 0;
    for (const auto& c : channels_) n += c.agent->control_rounds();
    return n;
  }
  // The latest data on any channel (silence is the silence of all of them).
  [[nodiscard]] uint64_t last_data_ns() const noexcept {
    uint64_t t = 0;
    for (const auto& c : channels_) t = std::max(t, c.agent->last_data_ns());
    return t;
  }

  [[nodiscard]] const ChannelMap& map() const noexcept { return map_; }
  [[nodiscard]] const SubscriberConfig& config() const noexcept { return cfg_; }
  [[nodiscard]] size_t size() const noexcept { return channels_.size(); }
  [[nodiscard]] uint32_t index(size_t k) const noexcept { return channels_[k].index; }
  [[nodiscard]] Agent& agent(size_t k) noexcept { return *channels_[k].agent; }
  [[nodiscard]] const Agent& agent(size_t k) const noexcept { return *channels_[k].agent; }
  [[nodiscard]] Medium& medium(size_t k) noexcept { return *channels_[k].medium; }
  [[nodiscard]] const Medium& medium(size_t k) const noexcept { return *channels_[k].medium; }
  [[nodiscard]] Agent* find(uint32_t channel) noexcept {
    for (auto& c : channels_)
      if (c.index == channel) return c.agent.get();
    return nullptr;
  }

 private:
  struct Channel {  // teardown: the agent, then the medium it runs over
    uint32_t index = 0;
    std::shared_ptr<Medium> medium;
    std::unique_ptr<Agent> agent;
  };
  struct Joining {
    uint32_t index;
    std::vector<uint32_t> instruments;  // its share of the filter (unused for all instruments)
  };

  // The channels to join, each opened and its engine built (what allocates,
  // may wait for its medium and may throw; books and window take long:
  // seconds on a loaded host) - none started yet. start_all then starts them
  // back to back (each medium's reader at the live edge) for the loop to
  // serve at once. Started one by one as each was built, the first would
  // sit attached and unserved while the others were built: it would hear a
  // publisher that may finish its session and leave meanwhile (data held
  // behind a gap, a last heartbeat, then silence: "publisher silent", then
  // "publisher-lost" with nothing delivered) although this subscriber never
  // was in time to subscribe, and its channels' live edges would lie seconds
  // apart. If one cannot be built, none is joined.
  std::vector<Channel> build_all(std::vector<Joining> joining) {
    std::vector<Channel> built;
    built.reserve(joining.size());
    for (Joining& j : joining) built.push_back(build(j.index, std::move(j.instruments)));
    channels_.reserve(channels_.size() + built.size());
    return built;
  }
  void start_all(std::vector<Channel> built) {
    for (Channel& ch : built) ch.agent->start();
    for (Channel& ch : built) channels_.push_back(std::move(ch));  // reserved by build_all
  }

  Channel build(uint32_t channel, std::vector<uint32_t> instruments) {
    SubscriberConfig c = cfg_;
    c.channel = static_cast<uint16_t>(cfg_.channel + channel);
    if (!cfg_.all_instruments) c.instruments = std::move(instruments);
    Channel ch;
    ch.index = channel;
    ch.medium = open_(channel);
    if (!ch.medium) fail("channel {} (index {}): no medium opened", c.channel, channel);
    ch.agent = std::make_unique<Agent>(*ch.medium, c, handler_at_(channel), counters_ ? counters_(channel) : nullptr, opts_);
    return ch;
  }
  ChannelMap map_;
  SubscriberConfig cfg_;
  HandlerAt handler_at_;
  Open open_;
  CountersAt counters_;
  SubscriberAgentOptions opts_;
  IdleStrategy idle_;
  std::vector<Channel> channels_;
};

}  // namespace mdcast::feed

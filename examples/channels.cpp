// A feed over 4 channels published by 2 threads through the library's runtime (runtime::PublisherRuntime),
// over the medium chosen by name as examples/publisher.cpp chooses it: each channel its own sequence space
// (over shm its own ring "<name>.<k>", over udp and verbs group address + k), one control endpoint for all
// of them, a synthetic order flow per thread over the instruments on its channels. `mdcast subscribe
// --channels 4 --name FEED` (with the same medium flags) reads it; at the end each instrument's book is
// printed as "book ID SEQUENCE CHECKSUM".
//   channels [--name FEED] [--subscribers N] [--rounds MESSAGES_PER_THREAD] [--medium udp|verbs ...]
#include <exception>
#include <vector>

#include <mdcast/book/generator.hpp>
#include <mdcast/core/stop.hpp>
#include <mdcast/feed/paced_loop.hpp>
#include <mdcast/runtime/publisher_runtime.hpp>
#include <mdcast/settings/media.hpp>

#include "example.hpp"

using namespace mdcast;
constexpr uint32_t kChannels = 4, kThreads = 2, kInstruments = 16;
StopFlag g_stop;  // SIGINT/SIGTERM: every thread ends its session cleanly

struct Flow {  // a thread's synthetic messages, `left` of them
  book::Generator gen;
  uint64_t left;
  bool next(wire::Message& m) noexcept {
    if (left == 0) return false;  // run_paced ends there
    --left;
    gen.next(m);
    return true;
  }
};

template <class E>  // the medium's entry in the list of media (settings/media.hpp), picked by name in main
int run(const example::Args& a, settings::Settings s) {
  using Runtime = runtime::PublisherRuntime<typename E::Publisher, typename E::Door>;
  s.feed.channels = kChannels;  // what tells channel index k's ring or group apart
  const uint64_t session = feed::new_session_id();

  runtime::PublisherPlan plan;
  plan.map = feed::ChannelMap(kChannels, example::kBooks.max_instruments);  // instruments by the stable hash
  plan.threads = kThreads;
  plan.engine.session = session;
  plan.engine.channel = s.feed.channel;  // channel index k is channel id + k (channel_settings)
  plan.engine.max_datagram = 0;  // what the medium carries
  plan.engine.books = example::kBooks;
  plan.wait_subscribers = a.subscribers * kChannels;  // a subscriber subscribes once per channel
  plan.linger_ns = 10 * kNsPerSec;  // serves recovery until the subscribers have left
  plan.stop = &g_stop;

  Runtime rt(plan, E::open_door(s), [&](uint32_t k, auto inbox) {  // runs on the thread that publishes channel k
    settings::Settings c = settings::channel_settings<E>(s, k);
    E::use_door(c, *rt.door(), std::move(inbox));  // the one control endpoint
    return E::publisher(c, session);
  });

  std::vector<std::vector<uint64_t>> books(kInstruments);  // [sequence, checksum], each written by its thread
  typename Runtime::Hooks hooks;
  hooks.started = [&](Runtime& r) {
    fmt::print(stderr, "channels: {} channels on {} threads; channel 1: {}; waiting for {} subscriber(s)\n",
               kChannels, kThreads, r.described(0), a.subscribers);
  };
  hooks.publish = [&](typename Runtime::Lane& lane) {
    book::GeneratorConfig g;
    g.seed = 1 + lane.thread();
    for (uint32_t i = 0; i < kInstruments; ++i)
      for (uint32_t k : lane.channels())
        if (plan.map.of(i) == k) g.ids.push_back(i);
    Flow flow{book::Generator(g), a.rounds * 1000ull};
    feed::Pace pace;  // as fast as the rings take it; rate, bursts and idling are the Pace's to set
    pace.start_ns = lane.t0();
    struct Round {
      typename Runtime::Lane& lane;
      bool on_round(uint64_t now, uint64_t) noexcept { return lane.report(now), !lane.stopping(); }
    } round{lane};
    return feed::run_paced(lane.publisher(), flow, pace, round);
  };
  hooks.finished = [&](typename Runtime::Lane& lane) {
    auto& ch = lane.publisher();
    for (size_t c = 0; c < ch.size(); ++c)
      for (uint32_t i = 0; i < kInstruments; ++i)
        if (plan.map.of(i) == ch.index(c)) {
          const auto& b = ch.agent(c).core().books().book(i);
          books[i] = {b.instrument_seq(), b.checksum()};
        }
  };
  const auto out = rt.run(std::move(hooks));
  for (uint32_t i = 0; i < kInstruments; ++i)
    if (!books[i].empty() && books[i][0] > 0) fmt::print("book {} {} {:016x}\n", i, books[i][0], books[i][1]);
  fmt::print(stderr, "channels: {} messages in {:.2f} s{}\n", out.published, (out.end_ns - out.t0) / 1e9,
             out.stopped ? " (stopped)" : "");
  return out.stopped ? 130 : 0;
}

int main(int argc, char** argv) try {
  const example::Args a = example::parse(argc, argv);
  stop_on_signals(g_stop);
  const settings::Settings s = example::settings(a);  // the medium by name, and its addresses
  return settings::with_medium(s.feed.medium, [&](auto entry) { return run<decltype(entry)>(a, s); });
} catch (const std::exception& e) {  // mdcast::Error: what failed and where, a channel's named
  fmt::print(stderr, "channels: {}\n", e.what());
  return 1;
}

// A feed over 4 channels published by 2 threads through the library's runtime (runtime::PublisherRuntime):
// each channel its own shm ring ("<name>.<k>") and sequence space, one control socket for all of them, a
// synthetic order flow per thread over the instruments on its channels. `mdcast subscribe --channels 4
// --name FEED` reads it; at the end each instrument's book is printed as "book ID SEQUENCE CHECKSUM".
//   channels [--name FEED] [--subscribers N] [--rounds MESSAGES_PER_THREAD]
#include <csignal>
#include <exception>
#include <vector>

#include <mdcast/book/generator.hpp>
#include <mdcast/core/stop.hpp>
#include <mdcast/feed/paced_loop.hpp>
#include <mdcast/media/shm/shm_medium.hpp>
#include <mdcast/runtime/publisher_runtime.hpp>

#include "example.hpp"

using namespace mdcast;
using Runtime = runtime::PublisherRuntime<media::shm::PublisherMedium, media::ControlFrontDoor>;

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

int main(int argc, char** argv) try {
  const example::Args a = example::parse(argc, argv);
  std::signal(SIGINT, [](int) { g_stop.request(); });
  std::signal(SIGTERM, [](int) { g_stop.request(); });
  const uint64_t session = feed::new_session_id();

  runtime::PublisherPlan plan;
  plan.map = feed::ChannelMap(kChannels, example::kBooks.max_instruments);  // instruments by the stable hash
  plan.threads = kThreads;
  plan.engine.session = session;
  plan.engine.channel = 1;  // channel index k is channel id 1 + k
  plan.engine.max_datagram = 0;  // what the medium carries
  plan.engine.books = example::kBooks;
  plan.wait_subscribers = a.subscribers * kChannels;  // a subscriber subscribes once per channel
  plan.linger_ns = 10 * kNsPerSec;  // serves recovery until the subscribers have left
  plan.stop = &g_stop;

  media::shm::Options door;
  door.name = a.name;
  Runtime rt(plan, media::shm::open_control_door(door), [&](uint32_t k, auto inbox) {
    media::shm::Options o;  // runs on the thread that publishes channel index k
    o.name = media::shm::channel_ring_name(a.name, kChannels, k);
    o.channel = static_cast<uint16_t>(plan.engine.channel + k);
    o.control = rt.door()->address();
    o.control_inbox = std::move(inbox);
    return std::make_unique<media::shm::PublisherMedium>(o, session);
  });

  std::vector<std::vector<uint64_t>> books(kInstruments);  // [sequence, checksum], each written by its thread
  Runtime::Hooks hooks;
  hooks.started = [&](Runtime& r) {
    fmt::print(stderr, "channels: {} channels on {} threads; channel 1: {}; waiting for {} subscriber(s)\n",
               kChannels, kThreads, r.described(0), a.subscribers);
  };
  hooks.publish = [&](Runtime::Lane& lane) {
    book::GeneratorConfig g;
    g.seed = 1 + lane.thread();
    for (uint32_t i = 0; i < kInstruments; ++i)
      for (uint32_t k : lane.channels())
        if (plan.map.of(i) == k) g.ids.push_back(i);
    Flow flow{book::Generator(g), a.rounds * 1000ull};
    feed::Pace pace;  // as fast as the rings take it; rate, bursts and idling are the Pace's to set
    pace.start_ns = lane.t0();
    struct Round {
      Runtime::Lane& lane;
      bool on_round(uint64_t now, uint64_t) noexcept { return lane.report(now), !lane.stopping(); }
    } round{lane};
    return feed::run_paced(lane.publisher(), flow, pace, round);
  };
  hooks.finished = [&](Runtime::Lane& lane) {
    auto& ch = lane.publisher();
    for (size_t c = 0; c < ch.size(); ++c)
      for (uint32_t i = 0; i < kInstruments; ++i)
        if (plan.map.of(i) == ch.index(c)) {
          const auto& b = ch.agent(c).core().books().book(i);
          books[i] = {b.instrument_seq(), b.checksum()};
        }
  };
  const Runtime::Outcome out = rt.run(std::move(hooks));
  for (uint32_t i = 0; i < kInstruments; ++i)
    if (!books[i].empty() && books[i][0] > 0) fmt::print("book {} {} {:016x}\n", i, books[i][0], books[i][1]);
  fmt::print(stderr, "channels: {} messages in {:.2f} s{}\n", out.published, (out.end_ns - out.t0) / 1e9,
             out.stopped ? " (stopped)" : "");
  return out.stopped ? 130 : 0;
} catch (const std::exception& e) {  // mdcast::Error: what failed and where, a channel's named
  fmt::print(stderr, "channels: {}\n", e.what());
  return 1;
}

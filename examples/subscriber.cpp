// An application consuming a feed: prints every message as it is delivered (in order,
// exactly once), says when books were reset or replaced by a snapshot, and exits 0 once
// the publisher has ended its session.
//   subscriber [--name FEED] [--medium udp [--interface IFACE] [--udp-group GROUP:PORT]] [--medium verbs --control-ip PUBLISHER_IP [--local-ip IP] [--group IP]]
#include <exception>
#include <string>
#include <string_view>

#include <mdcast/core/clock.hpp>
#include <mdcast/core/error.hpp>
#include <mdcast/feed/subscriber_agent.hpp>
#include <mdcast/settings/media.hpp>

#include "example.hpp"

using namespace mdcast;

// The handler. The agent calls it on its own thread, from inside do_work: it
// must not throw, block, or call back into the agent.
struct Printer {
  uint64_t messages = 0, recovered = 0, replaced = 0;

  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    ++messages;
    recovered += d.recovered;  // came late (retransmitted, reordered), still in order
    example::print(m);
  }
  // Messages were skipped: this instrument's book is now the publisher's as of a snapshot.
  void on_snapshot(uint32_t inst, const book::BookSet* books) noexcept {
    ++replaced;
    if (books && books->book(inst).defined())
      std::fprintf(stderr, "subscriber: instrument %u from a snapshot, %u orders\n", inst,
                   books->book(inst).order_count());
  }
  void on_reset(uint64_t session) noexcept {
    std::fprintf(stderr, "subscriber: session %016llx, books empty\n", static_cast<unsigned long long>(session));
  }
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    const std::string_view what = feed::to_string(e);  // "publisher silent", "session ended", ...
    std::fprintf(stderr, "subscriber: %.*s%s%.*s\n", static_cast<int>(what.size()), what.data(), detail.empty() ? "" : " ",
                 static_cast<int>(detail.size()), detail.data());
  }
};

template <class Medium>
void subscribe(Medium& medium) {
  feed::SubscriberConfig cfg;
  cfg.books = example::kBooks;
  feed::SubscriberAgentOptions opts;
  opts.idle = IdleMode::kBackoff;  // spin, then sleep while idle (kSpin: the lowest latency, a core of its own)
  Printer printer;                 // declared before the agent, as the medium is: both outlive it
  feed::SubscriberAgent agent(medium, cfg, printer, nullptr, opts);
  fmt::print(stderr, "subscriber: {}\n", medium.describe());

  struct GiveUp {  // asked after every control round; false ends run()
    decltype(agent)& a;
    std::string why;
    bool on_control_round(uint64_t now) {
      if (a.subscriber().subscribe_refused()) why = "subscription refused: " + a.subscriber().last_error();
      else if (now - a.last_data_ns() > 10 * kNsPerSec) why = "nothing from the publisher for 10 s";
      return why.empty();
    }
  } hooks{agent, {}};
  agent.start();
  if (!agent.run(hooks)) fail("{}", hooks.why);
  fmt::print(stderr, "subscriber: {} messages ({} recovered), {} books from snapshots\n", printer.messages,
             printer.recovered, printer.replaced);
}

int main(int argc, char** argv) try {
  const example::Args a = example::parse(argc, argv);
  const settings::Settings s = example::settings(a);  // the medium by name, and its addresses
  with_context(fmt::format("feed '{}' over {}", a.name, a.medium), [&] {
    // shm waits for the publisher's ring and connects to its control socket; udp joins the group
    // and connects where the publisher announces; verbs joins the group and starts connecting.
    settings::with_medium(s.feed.medium, [&](auto entry) {
      auto medium = decltype(entry)::subscriber(s);
      subscribe(*medium);
    });
  });
  return 0;
} catch (const std::exception& e) {  // mdcast::Error: setup or control failed; its text says what and where
  fmt::print(stderr, "subscriber: {}\n", e.what());
  return 1;
}

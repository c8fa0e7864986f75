// An application recording a feed: every datagram its subscriber is delivered,
// in sequence order, into nanosecond pcap files BASE.0000.pcap (+ .idx) that
// Wireshark reads and `mdcast replay BASE` publishes again. Exits 0 once the
// publisher has ended its session and everything up to the end is recorded.
//   record --out BASE [--name FEED] [--medium udp [--interface IFACE] [--udp-group GROUP:PORT]] [--medium verbs --control-ip PUBLISHER_IP [--local-ip IP] [--group IP]]
#include <exception>
#include <string>

#include <mdcast/core/clock.hpp>
#include <mdcast/core/error.hpp>
#include <mdcast/feed/subscriber_agent.hpp>
#include <mdcast/settings/media.hpp>
#include <mdcast/record/recorder.hpp>

#include "example.hpp"

using namespace mdcast;

template <class Medium>
void record_feed(Medium& medium, const std::string& out) {
  feed::SubscriberConfig cfg;  // every instrument: a recording is the whole feed
  cfg.books = example::kBooks;
  record::WriterOptions wo;
  wo.base = out;
  wo.rotate_bytes = uint64_t{1} << 30;  // BASE.0001.pcap after 1 GiB
  record::Recorder rec(wo);             // opens BASE.0000.pcap; the recorder is the subscriber's handler
  feed::SubscriberAgentOptions opts;
  opts.idle = IdleMode::kBackoff;
  feed::SubscriberAgent agent(medium, cfg, rec, nullptr, opts);
  // After a snapshot the recording holds the books it gave, so a replay goes on across it.
  rec.attach(agent.subscriber().books());
  fmt::print(stderr, "record: {} into {}\n", medium.describe(), rec.writer().current_file());

  struct Hooks {  // asked after every control round; false ends run()
    decltype(agent)& a;
    Medium& m;
    record::Recorder& r;
    std::string why;
    bool on_control_round(uint64_t now) {
      r.learn_source(m);  // on UDP the frames then come from the publisher's address
      if (r.failed()) why = r.writer().error();
      else if (a.subscriber().subscribe_refused()) why = "subscription refused: " + a.subscriber().last_error();
      else if (now - a.last_data_ns() > 10 * kNsPerSec) why = "nothing from the publisher for 10 s";
      return why.empty();
    }
  } hooks{agent, medium, rec, {}};
  agent.start();
  const bool ended = agent.run(hooks);
  rec.close();  // throws, naming the file, if a write failed
  if (!ended) fail("{}", hooks.why);
  const auto& c = rec.counters();
  fmt::print(stderr, "record: {} datagrams through sequence {} in {} file(s), {} gap(s)\n", c.datagrams.get(),
             rec.last_sequence(), rec.writer().files(), c.gap_markers.get());
}

int main(int argc, char** argv) try {
  const example::Args a = example::parse(argc, argv);
  if (a.out.empty()) fail("--out BASE is required (files BASE.0000.pcap, BASE.0001.pcap, ...)");
  const settings::Settings s = example::settings(a);  // the medium by name, and its addresses
  with_context(fmt::format("recording feed '{}' over {}", a.name, a.medium), [&] {
    // shm waits for the publisher's ring and connects to its control socket; udp joins the group
    // and connects where the publisher announces; verbs joins the group and starts connecting.
    settings::with_medium(s.feed.medium, [&](auto entry) {
      auto medium = decltype(entry)::subscriber(s);
      record_feed(*medium, a.out);
    });
  });
  return 0;
} catch (const std::exception& e) {  // mdcast::Error: setup, a write, or the feed failed; its text says what
  fmt::print(stderr, "record: {}\n", e.what());
  return 1;
}

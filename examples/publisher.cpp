// An application publishing its own market data (instruments, orders, trades) to N subscribers over
// shared memory, UDP multicast or RDMA verbs, the medium chosen by name as `mdcast` chooses it
// (mdcast/settings). Prints each message as published; examples/subscriber prints the same.
//   publisher [--subscribers N] [--rounds R] [--name FEED] [--medium udp [--interface IFACE] [--udp-group GROUP:PORT]] [--medium verbs [--local-ip IP] [--group IP]]
#include <exception>
#include <vector>

#include <mdcast/core/clock.hpp>
#include <mdcast/core/error.hpp>
#include <mdcast/feed/publisher_agent.hpp>
#include <mdcast/settings/media.hpp>

#include "example.hpp"

using namespace mdcast;
using wire::Message;
constexpr auto kTrading = wire::TradingStatus::kTrading;

// Definitions first: subscribers learn the instruments from them. Order ids
// are unique across instruments (the books index orders by id alone).
std::vector<Message> todays_messages(unsigned rounds) {
  static constexpr std::string_view kNews = "ACME: dividend 0.42";  // publish() copies it
  std::vector<Message> v{Message::make_definition(0, "ACME", 100, -2), Message::make_definition(1, "BOLT", 10, -4),
                         Message::make_status(0, kTrading), Message::make_status(1, kTrading)};
  uint64_t id = 1, trade = 1;
  for (unsigned r = 0; r < rounds; ++r)
    for (uint32_t inst = 0; inst < 2; ++inst, id += 2) {
      const int64_t px = 10'000 + 10 * r;
      v.push_back(Message::make_add(inst, id, px, 300, wire::Side::kBuy));
      v.push_back(Message::make_add(inst, id + 1, px + 5, 200, wire::Side::kSell));
      v.push_back(Message::make_modify(inst, id, px + 1, 250));
      v.push_back(Message::make_execute(inst, id + 1, px + 5, 50, trade++));  // a trade: 50 of the ask
      v.push_back(Message::make_delete(inst, id));
      v.push_back(Message::make_delete(inst, id + 1));
    }
  v.push_back(Message::make_opaque(0, std::as_bytes(std::span(kNews.data(), kNews.size()))));  // books ignore it
  return v;
}

template <class Medium>
void publish(Medium& medium, const example::Args& a, uint64_t session) {
  feed::PublisherConfig cfg;
  cfg.session = session;
  cfg.max_datagram = 0;  // what the medium carries (a shm slot, the verbs port's MTU)
  cfg.books = example::kBooks;
  feed::PublisherAgent agent(medium, cfg);  // declared after the medium: destroyed before it
  fmt::print(stderr, "publisher: {}; waiting for {} subscriber(s)\n", medium.describe(), a.subscribers);
  // Subscribers there before the first message need no recovery.
  for (const uint64_t give_up = monotonic_ns() + 30 * kNsPerSec; agent.subscribed_clients() < a.subscribers;) {
    if (monotonic_ns() > give_up) fail("only {} subscriber(s) came in 30 s", agent.subscribed_clients());
    agent.do_work(monotonic_ns());
    sleep_ns(kNsPerMs);
  }
  std::vector<Message> messages = todays_messages(a.rounds);
  for (Message& m : messages) {
    feed::PublishResult r;
    // Back-pressured (the medium or pacing holds back): run the duty cycle, offer the same message again.
    while ((r = agent.publish(m, monotonic_ns())) == feed::PublishResult::kBackPressured) agent.do_work(monotonic_ns());
    if (r != feed::PublishResult::kOk)  // the feed is unchanged: nothing was sent
      fail("message {} refused: {}", &m - messages.data(),
           r == feed::PublishResult::kTooLarge ? "too large" : book::to_string(agent.core().last_reject()));
    example::print(m);
    agent.do_work(monotonic_ns());  // flush timer, heartbeats, the control plane (on its own timer)
  }
  // Subscribers leave once they have everything up to the end of session;
  // until they have, the publisher serves their retransmit and snapshot requests.
  for (const uint64_t give_up = monotonic_ns() + 5 * kNsPerSec; !agent.end_session(monotonic_ns());) {
    if (monotonic_ns() > give_up) fail("the medium took no datagram for 5 s");
    agent.do_work(monotonic_ns());
  }
  agent.linger(monotonic_ns() + 10 * kNsPerSec, 300 * kNsPerMs, 200 * kNsPerUs, [] { return false; });
  fmt::print(stderr, "publisher: {} messages, {} datagrams\n", messages.size(), agent.core().last_committed());
}

int main(int argc, char** argv) try {
  const example::Args a = example::parse(argc, argv);
  const settings::Settings s = example::settings(a);  // the medium by name, and its addresses
  const uint64_t session = feed::new_session_id();  // 64 random bits: new per run, never reused
  with_context(fmt::format("feed '{}' over {}", a.name, a.medium), [&] {
    // The medium's types from its name (an Error names the media this build has).
    settings::with_medium(s.feed.medium, [&](auto entry) {
      // shm creates the ring and listens for subscribers; udp sends to the group and announces its
      // control address; verbs joins the group and registers its ring.
      auto medium = decltype(entry)::publisher(s, session);
      publish(*medium, a, session);
    });
  });
  return 0;
} catch (const std::exception& e) {  // mdcast::Error: setup or control failed; its text says what and where
  fmt::print(stderr, "publisher: {}\n", e.what());
  return 1;
}

// The bench's control-plane load client (apps/bench/control_load.hpp)
// against a real publisher: a shm medium's control socket and the
// publisher's control service, driven from this thread in turns with the
// client. Every client is admitted, every kind of request is answered and
// counted on both sides; clients past the publisher's admission limit are
// reported refused, never hidden. Nothing here depends on timing: loops run
// until what they wait for has happened (a generous deadline says otherwise).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include "bench/control_load.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/media/shm/shm_medium.hpp"

namespace mdcast::app::bench {
namespace {

constexpr uint32_t kInstruments = 16;

media::shm::Options shm_opts(const char* what) {
  media::shm::Options o;
  o.name = fmt::format("ut-ctlload-{}-{}", what, ::getpid());
  o.dir = "/dev/shm";
  o.slots = 1024;
  o.max_datagram = 1024;
  o.huge_pages = false;
  return o;
}

feed::PublisherConfig pub_config() {
  feed::PublisherConfig c;
  c.session = 7;  // the medium's (Publisher below)
  c.books.max_instruments = kInstruments;
  c.max_datagram = 0;  // the largest the ring holds
  return c;
}

ControlLoadConfig load_config(const std::string& address, uint32_t clients) {
  ControlLoadConfig c;
  c.address = address;
  c.clients = clients;
  c.instruments = kInstruments;
  // Fast schedules: the test waits for counts, not for time.
  c.status_interval_ns = 5 * kNsPerMs;
  c.retransmits_per_s = 500;
  c.snapshots_per_s = 100;
  c.session_queries_per_s = 500;
  return c;
}

// A publisher and its feed, served from the caller's loop.
struct Publisher {
  media::shm::PublisherMedium medium;
  feed::PublisherAgent<media::shm::PublisherMedium> agent;
  std::byte payload[32]{};
  uint64_t published = 0;
  explicit Publisher(const media::shm::Options& o) : medium(o, 7), agent(medium, pub_config(), {}, {}, {0}) {}
  void step(uint64_t now) {
    wire::Message m = wire::Message::make_opaque(static_cast<uint32_t>(published % kInstruments), payload);
    if (agent.publish(m, now) == feed::PublishResult::kOk) ++published;
    agent.do_work(now);
  }
};

// Runs publisher and client in turns until done() or 60 s.
template <class Done>
bool run_until(Publisher& p, ControlLoad& load, Done&& done) {
  const uint64_t deadline = monotonic_ns() + 60 * kNsPerSec;
  while (!done()) {
    if (monotonic_ns() > deadline) return false;
    p.step(monotonic_ns());
    load.poll(monotonic_ns(), 0);
  }
  return true;
}

TEST(ControlLoad, SixtyFourClientsAreAdmittedAndEveryRequestIsAnswered) {
  Publisher p(shm_opts("64"));
  ControlLoad load(load_config(p.medium.server().address(), 64));
  ASSERT_TRUE(run_until(p, load, [&] { return load.settled(); }));
  const ControlLoadStats& s = load.stats();
  EXPECT_EQ(s.subscribed, 64u);
  EXPECT_EQ(s.active, 64u);
  EXPECT_EQ(s.refused, 0u);
  EXPECT_EQ(s.cut, 0u);
  EXPECT_EQ(s.connect_failures, 0u);
  EXPECT_EQ(p.agent.subscribed_clients(), 64u);
  EXPECT_EQ(p.medium.server().stats().clients.get(), 64u);
  // Every kind of request, answered where the protocol answers.
  ASSERT_TRUE(run_until(p, load, [&] {
    return s.sent_status >= 640 && s.retransmit_replies >= 8 && s.snapshot_done >= 4 && s.session_status >= 8;
  })) << "status " << s.sent_status << ", retransmit replies " << s.retransmit_replies << ", snapshots done "
      << s.snapshot_done << ", session status " << s.session_status;
  EXPECT_GT(s.retransmitted_datagrams, 0u) << "retransmit requests ask for what the ring holds";
  EXPECT_EQ(s.malformed, 0u);
  EXPECT_EQ(s.unexpected, 0u);
  EXPECT_EQ(s.send_dropped, 0u);
  EXPECT_TRUE(load.problems().empty()) << load.problems().front();
  // The publisher saw what was sent: every status report arrives (they are not answered).
  const uint64_t sent = s.sent_status;
  ASSERT_TRUE(run_until(p, load, [&] { return p.agent.control().counters().status_reports.get() >= sent; }));
  EXPECT_EQ(p.agent.control().counters().subscribes.get(), 64u);
  EXPECT_GT(p.agent.control().counters().retransmit_requests.get(), 0u);
  EXPECT_GT(p.agent.control().counters().snapshot_requests.get(), 0u);
  EXPECT_EQ(p.medium.server().stats().refused.get(), 0u);
  EXPECT_EQ(p.medium.server().stats().refused_admission.get(), 0u);
  // Leaving is seen by the publisher.
  load.close_all();
  EXPECT_EQ(s.active, 0u);
  ASSERT_TRUE(run_until(p, load, [&] { return p.medium.clients() == 0; }));
}

TEST(ControlLoad, ClientsPastThePublishersLimitAreReportedRefused) {
  media::shm::Options o = shm_opts("limit");
  o.control_server.max_clients = 16;
  Publisher p(o);
  ControlLoad load(load_config(p.medium.server().address(), 24));
  ASSERT_TRUE(run_until(p, load, [&] { return load.settled(); }));
  const ControlLoadStats& s = load.stats();
  EXPECT_EQ(s.subscribed, 16u);
  EXPECT_EQ(s.refused, 8u) << "a refused client is counted, not retried behind the caller's back";
  EXPECT_EQ(s.active, 16u);
  ASSERT_FALSE(load.problems().empty());
  EXPECT_NE(load.problems().front().find("refused"), std::string::npos) << load.problems().front();
  EXPECT_EQ(p.medium.server().stats().refused.get() + p.medium.server().stats().refused_admission.get(), 8u);
}

TEST(ControlLoad, AnAddressNobodyServesFailsEveryClientInWords) {
  ControlLoad load(load_config(fmt::format("unix:@ut-ctlload-nobody-{}", ::getpid()), 4));
  const uint64_t deadline = monotonic_ns() + 60 * kNsPerSec;
  while (!load.settled() && monotonic_ns() < deadline) load.poll(monotonic_ns(), 1);
  EXPECT_EQ(load.stats().connect_failures, 4u);
  EXPECT_EQ(load.stats().subscribed, 0u);
  ASSERT_FALSE(load.problems().empty());
  EXPECT_NE(load.problems().front().find("Connection refused"), std::string::npos) << load.problems().front();
}

TEST(ControlLoad, TheOpenFilesLimitIsRaisedOrTheShortfallNamed) {
  EXPECT_EQ(raise_open_files(64), "");
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "no hard limit to run into";
  const std::string why = raise_open_files(static_cast<uint64_t>(rl.rlim_max) + 1);
  EXPECT_NE(why.find(std::to_string(rl.rlim_max)), std::string::npos) << why;
  EXPECT_NE(why.find("ulimit -Hn"), std::string::npos) << why;
}

}  // namespace
}  // namespace mdcast::app::bench

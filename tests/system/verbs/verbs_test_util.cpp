#include "verbs_test_util.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "mdcast/wire/messages.hpp"

namespace mdcast::test::verbs {

book::BookConfig book_config(const Scenario& s) { return {s.instruments + 8, 1u << 15, 256}; }

book::GeneratorConfig generator_config(const Scenario& s) {
  book::GeneratorConfig g;
  g.seed = s.seed;
  g.instruments = s.instruments;
  return g;
}

feed::PublisherConfig publisher_config(const Scenario& s, size_t max_datagram) {
  feed::PublisherConfig c;
  c.session = 4242;
  c.sender_id = 9;
  c.max_datagram = max_datagram;
  c.heartbeat_interval_ns = 20 * kNsPerMs;
  c.flush_interval_ns = kNsPerMs;  // batch a paced feed into full datagrams
  c.retransmit_bytes = 16u << 20;
  c.books = book_config(s);
  return c;
}

feed::SubscriberConfig subscriber_config(const Scenario& s, size_t max_datagram) {
  feed::SubscriberConfig c;
  c.max_datagram = max_datagram;
  c.books = book_config(s);
  c.window_bytes = 8u << 20;
  // Generous under emulation: a TCG VM stalls processes for tens of ms.
  c.request_timeout_ns = 500 * kNsPerMs;
  c.max_retries = 6;
  c.publisher_timeout_ns = 5 * kNsPerSec;
  c.status_interval_ns = 100 * kNsPerMs;
  return c;
}

namespace {
struct NullSink {
  feed::SendResult send(std::span<const std::byte>, uint64_t) noexcept { return feed::SendResult::kSent; }
  feed::SendResult send_unsequenced(std::span<const std::byte>) noexcept { return feed::SendResult::kSent; }
};
}  // namespace

Expected replay(const Scenario& s) {
  NullSink sink;
  auto cfg = publisher_config(s, 1024);
  cfg.retransmit_bytes = 1u << 20;
  feed::Publisher<NullSink> pub(cfg, sink);
  book::Generator gen(generator_config(s));
  Expected e;
  e.log.resize(cfg.books.max_instruments);
  for (uint64_t i = 0; i < s.messages; ++i) {
    wire::Message m;
    gen.next(m);
    if (pub.publish(m, 1) != feed::PublishResult::kOk) break;
    e.log[m.instrument].push_back(message_hash(m));
  }
  pub.flush(1);
  e.books = std::make_unique<book::BookSet>(cfg.books);
  // Re-apply to an owned BookSet (the publisher's dies with it).
  book::Generator gen2(generator_config(s));
  for (uint64_t i = 0; i < s.messages; ++i) {
    wire::Message m;
    gen2.next(m);
    (void)e.books->apply(m);
  }
  // Every published message got the next per-instrument sequence.
  for (uint32_t i = 0; i < e.log.size(); ++i) e.books->set_instrument_seq(i, static_cast<uint32_t>(e.log[i].size()));
  e.global_checksum = pub.core().books().global_checksum();
  if (e.books->global_checksum() != e.global_checksum) e.global_checksum = 0;  // replay mismatch: fails verify
  return e;
}

std::string verify(const Expected& e, const Recorder& rec, const book::BookSet* books) {
  if (e.global_checksum == 0) return "the local replay of the publication is inconsistent";
  for (uint32_t inst = 0; inst < e.log.size(); ++inst) {
    const auto& log = e.log[inst];
    uint32_t cur = 0;
    for (const auto& ev : rec.per_inst[inst]) {
      if (ev.snapshot) {
        if (ev.iseq < cur) return fmt::format("instrument {}: snapshot went back from {} to {}", inst, cur, ev.iseq);
        cur = ev.iseq;
        continue;
      }
      if (ev.iseq != cur + 1)
        return fmt::format("instrument {}: sequence {} delivered after {} ({})", inst, ev.iseq, cur,
                           ev.iseq <= cur ? "duplicate or out of order" : "silent hole");
      if (ev.iseq > log.size() || log[ev.iseq - 1] != ev.hash)
        return fmt::format("instrument {}: message {} differs from what was published", inst, ev.iseq);
      cur = ev.iseq;
    }
    if (cur != log.size()) return fmt::format("instrument {}: delivery stopped at {} of {}", inst, cur, log.size());
    if (!books) return "subscriber keeps no books";
    if (std::string d = e.books->diff(inst, *books); !d.empty()) return fmt::format("instrument {}: {}", inst, d);
  }
  if (books->global_checksum() != e.global_checksum)
    return fmt::format("global checksum {:x} != published {:x}", books->global_checksum(), e.global_checksum);
  return {};
}

void write_result(const std::string& path, const std::map<std::string, std::string>& kv) {
  std::ofstream f(path + ".tmp");
  for (const auto& [k, v] : kv) f << k << ' ' << v << '\n';
  f.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

std::map<std::string, std::string> read_result(const std::string& path) {
  std::map<std::string, std::string> kv;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    const auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    kv[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return kv;
}

}  // namespace mdcast::test::verbs

// `mdcast record`: a subscriber of every instrument whose delivery hook
// writes each datagram it is delivered - live and recovered, in sequence
// order - into nanosecond pcap files (the library's RecordingWriter), with
// marker frames where the sequence breaks: a new session, or a snapshot that
// replaced a range (then followed by the books the snapshot gave, so a replay
// goes on). Heartbeats are not delivered through the hook and are not
// recorded: a replay is a publisher and makes its own (docs/recording.md).
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/record/writer.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "record_commands.hpp"
#include "print.hpp"
#include "registry.hpp"
#include "result.hpp"
#include "runners.hpp"

namespace mdcast::app {

namespace {


// Image frames carry at most this much of the books each.
constexpr size_t kImageChunk = 60'000;

struct RecordHandler {
  record::RecordingWriter& w;
  RecordCounters* c;
  uint64_t realtime_offset;  // CLOCK_REALTIME - CLOCK_MONOTONIC at the start: pcap times are wall-clock
  const book::BookSet* books = nullptr;  // the subscriber's: what a snapshot left, for the image
  std::unique_ptr<std::byte[]> image = std::make_unique<std::byte[]>(kImageChunk + wire::kMaxMessage);
  uint64_t last_seq = 0;
  uint64_t new_session = 0;  // a session began: marked before its first datagram
  uint64_t delivered = 0;

  // The books as the snapshot left them, as image frames after the gap
  // marker: a replay publishes them and goes on. Runs once per snapshot
  // (rare, the recovery path); encodes into the buffer allocated once.
  void write_image(uint64_t next_seq, uint64_t t) noexcept {
    size_t used = 0;
    auto put = [&](const wire::Message& m) {
      const size_t n = wire::encoded_size(m);
      if (used + n > kImageChunk) {
        if (w.mark({record::MarkerKind::kImage, next_seq, 0, {image.get(), used}}, t)) c->image_frames.add();
        used = 0;
      }
      wire::encode(m, image.get() + used);
      used += n;
    };
    for (uint32_t i = 0; i < books->max_instruments(); ++i) {
      const book::OrderBook& b = books->book(i);
      if (!b.defined() && b.order_count() == 0 && b.status() == wire::TradingStatus::kPreOpen) continue;
      if (b.defined()) {
        wire::Message m;
        m.type = wire::MsgType::kInstrumentDefinition;
        m.instrument = i;
        m.definition = b.definition();
        put(m);
      }
      wire::Message st;
      st.type = wire::MsgType::kTradingStatus;
      st.instrument = i;
      st.status = {b.status()};
      put(st);
      books->for_each_order(
          i, [&](const book::Order& o) { put(wire::Message::make_add(i, o.id, o.price, o.quantity, o.side)); });
    }
    if (w.mark({record::MarkerKind::kImage, next_seq, 1, {image.get(), used}}, t)) c->image_frames.add();
  }

  void on_message(const wire::Message&, const feed::Delivery&) noexcept { ++delivered; }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t session) noexcept {
    new_session = session;
    last_seq = 0;
  }
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    fmt::print(stderr, "mdcast record: {}{}{}\n", to_string(e), detail.empty() ? "" : ": ", detail);
  }
  void on_datagram_delivered(std::span<const std::byte> d, const feed::Delivery& dl) noexcept {
    const uint64_t t = dl.receive_time_ns + realtime_offset;
    if (new_session) {
      if (w.mark({record::MarkerKind::kSession, new_session, 0, {}}, t)) c->session_markers.add();
      new_session = 0;
    }
    // A recording that starts late, or a snapshot that replaced a range, is a
    // break a replay must know of: the books after it need what is missing.
    if (dl.sequence != last_seq + 1) {
      if (w.mark({record::MarkerKind::kGap, last_seq + 1, dl.sequence, {}}, t)) c->gap_markers.add();
      if (books) write_image(dl.sequence, t);
    }
    last_seq = dl.sequence;
    if (w.write(d, dl.sequence, t))
      c->datagrams.add();
    else
      c->dropped.add();
    c->frames.set(w.frames());
    c->bytes.set(w.bytes());
    c->files.set(w.files());
  }
};

// The publisher's address, for the frames' source: on UDP the host of the
// control address it announced ("tcp:10.0.0.5:7471").
template <class Medium>
bool learn_source(Medium& m, record::FrameAddress& a) {
  if constexpr (requires { m.inner(); }) {
    return learn_source(m.inner(), a);
  } else if constexpr (requires { m.control_address(); }) {
    const std::string& ctl = m.control_address();
    if (ctl.rfind("tcp:", 0) != 0) return false;
    const std::string host = ctl.substr(4, ctl.rfind(':') - 4);
    uint32_t ip = 0;
    if (!record::parse_ipv4(host, ip) || ip == 0) return false;
    a.source_ip = ip;
    return true;
  } else {
    return false;
  }
}

record::FrameAddress frame_address(const Settings& s, MediumKind medium) {
  record::FrameAddress a;
  uint16_t port = a.group_port;
  // Every medium's frames go to udp.group (239.77.1.1:7470 by default) but verbs, whose group is its own.
  if (!record::parse_ipv4(s.udp.group, a.group_ip, &port))
    fail_recording_usage("record: udp.group '{}' is not IPv4 GROUP:PORT", s.udp.group);
  a.group_port = a.source_port = port;
  if (medium == MediumKind::kVerbs) {
    if (!record::parse_ipv4(s.verbs.group, a.group_ip))
      fail_recording_usage("record: verbs.group '{}' is not IPv4", s.verbs.group);
    if (!s.verbs.control_ip.empty()) (void)record::parse_ipv4(s.verbs.control_ip, a.source_ip);
  }
  return a;
}

template <class Medium>
int record_loop(Settings& s, const RecordArgs& a, Medium& medium, std::string_view medium_name) {
  record::WriterOptions wo;
  wo.base = a.out;
  wo.rotate_bytes = a.rotate_size.empty() ? 0 : parse_size(a.rotate_size);
  wo.rotate_ns = a.rotate_time.empty() ? 0 : parse_duration(a.rotate_time);
  wo.index_every = a.index_every;
  wo.max_datagram = record::kMaxPayload;
  wo.address = frame_address(s, resolve_medium(s.feed.medium));
  record::RecordingWriter writer(std::move(wo));

  MirroredCounters medium_counters(medium.counter_groups());
  std::vector<stats::Section> sections{{"sub", feed::SubscriberCounters::kInfo}, {"rec", RecordCounters::kInfo}};
  medium_counters.add_sections(sections);
  stats::CountersFile cf("recorder", s.feed.name, std::string(medium_name), sections);
  auto* rc = cf.section<RecordCounters>(1);
  RecordHandler h{writer, rc, realtime_ns() - monotonic_ns()};
  feed::SubscriberAgent<Medium, RecordHandler> agent(medium, subscriber_config(s), h,
                                                     cf.section<feed::SubscriberCounters>(0),
                                                     {s.feed.control_poll_ns, s.feed.idle});
  h.books = agent.subscriber().books();
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast record: {}; into {}{}\n", medium.describe(), writer.current_file(),
             writer.options().rotate_bytes || writer.options().rotate_ns ? " (rotating)" : "");
  agent.start();
  const uint64_t t0 = monotonic_ns();
  std::string outcome = "ok";
  bool source_known = resolve_medium(s.feed.medium) != MediumKind::kUdp;
  struct Hooks {
    decltype(agent)& ag;
    Medium& m;
    record::RecordingWriter& w;
    const Settings& s;
    uint64_t t0;
    std::string& outcome;
    bool& source_known;
    stats::CountersFile& cf;
    MirroredCounters& mc;
    uint64_t last_stats = 0;
    bool on_control_round(uint64_t now) {
      // A control round is every control_poll_ns (100 us): the counters file a few times a second is enough.
      if (now - last_stats > 250 * kNsPerMs) {
        last_stats = now;
        cf.touch(now);
        mc.refresh(cf);
      }
      if (!source_known) {
        record::FrameAddress fa = w.options().address;
        if (learn_source(m, fa)) {
          w.set_address(fa);
          source_known = true;
        }
      }
      if (g_stop) return false;
      if (w.failed()) {
        outcome = "error: " + w.error();
        return false;
      }
      return !subscriber_done(ag, s, t0, now, outcome);
    }
  } hooks{agent, medium, writer, s, t0, outcome, source_known, cf, medium_counters};
  agent.run(hooks);
  std::string write_error;
  try {
    writer.close();
  } catch (const Error& e) {
    write_error = e.what();
  }
  rc->files.set(writer.files());
  medium_counters.refresh(cf);
  const auto& sub = agent.subscriber();
  // A gap with its image replays; without one (no books) it does not.
  const bool breaks = rc->gap_markers.get() && !h.books;
  const bool clean = (outcome == "ok" || outcome == "duration") && write_error.empty() && !breaks && !rc->dropped.get();
  cf.set_state(clean ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  if (!s.sub.result.empty()) {
    RunResult r;
    r.role = "subscriber";
    r.name = s.feed.name;
    r.medium = medium_name;
    r.outcome = g_stop ? "interrupted" : outcome;
    r.session = sub.session();
    r.last_sequence = sub.next_sequence() - 1;
    r.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
    r.messages = h.delivered;
    dump_counters(sub.counters(), "sub.", r.counters);
    dump_counters(*rc, "rec.", r.counters);
    if (const auto* b = sub.books())
      for (uint32_t i = 0; i < b->max_instruments(); ++i)
        r.books.push_back({i, b->book(i).instrument_seq(), b->book(i).checksum()});
    write_result(s.sub.result, r);
  }
  fmt::print(stderr,
             "mdcast record: {} (session {:016x}): {} datagrams through sequence {} in {} file(s) from {} ({}); {} "
             "gap marker(s), {} not recorded\n",
             g_stop ? "interrupted" : clean || outcome != "ok" ? outcome : "incomplete", sub.session(),
             rc->datagrams.get(), h.last_seq, writer.files(),
             record::recording_file(writer.options().base, 0), format_bytes(writer.bytes()), rc->gap_markers.get(),
             rc->dropped.get());
  if (!write_error.empty()) fmt::print(stderr, "mdcast record: {}\n", write_error);
  if (rc->gap_markers.get())
    fmt::print(stderr, "mdcast record: the recording has {} gap(s) (a snapshot replaced datagrams, or it began after "
                       "sequence 1){}; start the recorder before the publisher (publish --wait-subscribers) for a "
                       "whole session\n", rc->gap_markers.get(),
               h.books ? ", each followed by the books the snapshot gave (a replay goes on from them)" : "");
  if (g_stop) return exit_code::kInterrupted;
  if (outcome == "publisher-lost") return rc->datagrams.get() ? exit_code::kDataLost : exit_code::kSetup;
  return clean ? exit_code::kOk : exit_code::kDataLost;
}

}  // namespace

int run_record(Settings& s, const RecordArgs& a) {
  if (a.out.empty()) fail_recording_usage("record: --out BASE is required (files BASE.0000.pcap, BASE.0001.pcap, ...)");
  // Everything is recorded, whatever a config file says about the filter.
  s.sub.all_instruments = true;
  s.sub.instruments.clear();
  if (resolve_medium(s.feed.medium) == MediumKind::kShm && s.shm.max_datagram > record::kMaxPayload)
    fail("record: shm.max_datagram {} does not fit an IPv4/UDP frame (at most {}); lower it on the publisher",
         s.shm.max_datagram, record::kMaxPayload);
  namespace fs = std::filesystem;
  const fs::path base(a.out);
  const std::string dir = base.has_parent_path() ? base.parent_path().string() : std::string(".");
  if (!fs::is_directory(dir)) fail_recording_usage("record --out {}: directory {} does not exist", a.out, dir);
  const uint64_t rotate = a.rotate_size.empty() ? 0 : parse_size(a.rotate_size);
  const uint64_t need = !a.min_free.empty() ? parse_size(a.min_free) : std::max<uint64_t>(rotate, uint64_t{256} << 20);
  check_room(need, dir, fmt::format("recording {}.*.pcap", a.out),
             "record elsewhere (--out), or lower --min-free / --rotate-size");
  if (s.feed.channels > 1)
    fail_recording_usage("record takes one channel, and the feed has {} (feed.channels): one recorder per channel "
                         "is not built yet", s.feed.channels);
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    auto medium = E::subscriber(s);
    // Through the fault injector, as `mdcast subscribe` is: the tests record
    // with loss to show that recovered datagrams are recorded in order.
    media::fault::FaultyMedium<typename E::Subscriber> faulty(*medium,
                                                              injected_faults(s, static_cast<uint64_t>(::getpid())));
    return record_loop(s, a, faulty, E::kName);
  });
}

}  // namespace mdcast::app

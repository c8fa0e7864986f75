// The UDP medium's setup and control duty (udp_medium.hpp).
#include "mdcast/media/udp/udp_medium.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::udp {
namespace {

// How long a subscriber's control connection must have failed before an
// announcement of another address may move it (a restarted publisher on a
// new port): one forged announcement cannot move a subscriber that is
// connected, and one that is not retries its address for this long first.
constexpr uint64_t kFollowAfterNs = 2 * kNsPerSec;
// How long an announced address that failed (refused, closed, or silent to a
// Subscribe for kFollowAfterNs) is not taken again: 10 s, doubling with each
// failure to 80 s. An impostor announcing every millisecond cannot take a
// subscriber back from the publisher that answers it.
constexpr uint64_t kHoldNs = 10 * kNsPerSec;
constexpr uint32_t kMaxHoldDoublings = 3;
constexpr uint64_t kErrorReportNs = kNsPerSec;
// At most one signature checked per this long (~50 µs each): a flood of
// forged announcements costs the subscriber's control thread at most ~5 %.
// The publisher's own repeat byte for byte and are checked once.
constexpr uint64_t kVerifyGapNs = kNsPerMs;

std::string publisher_control(const Options& o, const Interface& iface) {
  if (!o.control.empty()) return o.control;
  if (o.control_inbox)
    fail("udp: a control inbox without the shared endpoint's address (Options::control)");
  return fmt::format("tcp:{}:{}", iface.address_text(), o.control_port);
}

// The address subscribers are told: a wildcard listen address means "this
// host", which they reach at the interface's address.
std::string announced_address(const std::string& listening, const Interface& iface) {
  const std::string any = "tcp:0.0.0.0:";
  if (listening.rfind(any, 0) == 0) return fmt::format("tcp:{}:{}", iface.address_text(), listening.substr(any.size()));
  return listening;
}

}  // namespace

Rails Rails::resolve(const Options& o) {
  Rails r;
  r.iface[0] = find_interface(o.rail_a.interface);
  r.group[0] = GroupAddress::parse(o.rail_a.group);
  r.two = !o.rail_b.group.empty();
  r.payload = std::min(r.iface[0].payload(o.mtu), wire::kMaxDatagram);
  if (r.two) {
    r.iface[1] = find_interface(o.rail_b.interface.empty() ? o.rail_a.interface : o.rail_b.interface);
    r.group[1] = GroupAddress::parse(o.rail_b.group);
    if (r.iface[1].index == r.iface[0].index && r.group[1].group_be == r.group[0].group_be &&
        r.group[1].port == r.group[0].port)
      fail("udp: rail B ({} on {}) is rail A: give it another group or interface", r.group[1].text, r.iface[1].name);
    r.payload = std::min(r.payload, r.iface[1].payload(o.mtu));
  }
  if (r.payload < wire::kMinDatagram)
    fail("udp: an MTU of {} on {} leaves {} bytes per datagram; mdcast needs at least {} (udp.mtu)",
         o.mtu ? o.mtu : r.iface[0].mtu, r.iface[0].name, r.payload, wire::kMinDatagram);
  return r;
}

std::string Rails::describe() const {
  std::string s = fmt::format("{} {} on {} ({})", group[0].multicast ? "multicast" : "unicast", group[0].text,
                              iface[0].name, iface[0].address_text());
  if (two) s += fmt::format(", rail B {} on {} ({})", group[1].text, iface[1].name, iface[1].address_text());
  return s + fmt::format(", {} B datagrams", payload);
}

// -------------------------------------------------------------- publisher --

std::string control_listen_address(const Options& o) {
  return publisher_control(o, find_interface(o.rail_a.interface));
}

PublisherMedium::PublisherMedium(const Options& o, uint64_t session)
    : opts_(o),
      rails_(Rails::resolve(o)),
      server_(publisher_control(o, rails_.iface[0]), o.control_server, o.control_inbox),
      fd_{open_sender(rails_.iface[0], rails_.group[0], o, rails_.payload),
          rails_.two ? open_sender(rails_.iface[1], rails_.group[1], o, rails_.payload) : UniqueFd()},
      sink_(fd_[0].get(), fd_[1].get(), o.gso && kernel_has_gso(), counters_),
      session_(session),
      link_(rails_.iface, rails_.two ? 2 : 1, opts_, "publisher", false) {
  if (o.also_to.size() > kMaxAlsoTo)
    fail("udp.also_to: {} destinations; a publisher sends to {} at most (a relay on each host fans out further)",
         o.also_to.size(), kMaxAlsoTo);
  for (const std::string& to : o.also_to) {
    also_to_.push_back(with_context("udp.also_to", [&] { return GroupAddress::parse(to); }));
    also_.push_back(open_sender(rails_.iface[0], also_to_.back(), o, rails_.payload));
    (void)sink_.add_destination(also_.back().get());
  }
  announcement_ = encode_announcement({o.channel, session, announced_address(server_.address(), rails_.iface[0])},
                                      o.announce_key.get());
}

PublisherFit PublisherMedium::configure(PublisherFit c) const {
  if (c.session != session_)
    fail("udp: the medium announces session {:016x}, the engine publishes session {:016x}: build both with the same "
         "session", session_, c.session);
  if (c.max_datagram == 0) c.max_datagram = rails_.payload;
  if (c.max_datagram > rails_.payload)
    fail("udp: publisher.max_datagram {} is more than a datagram carries on {} ({} bytes at MTU {}): lower it, "
         "or raise udp.mtu where the network carries jumbo frames",
         c.max_datagram, rails_.iface[0].name, rails_.payload, opts_.mtu ? opts_.mtu : rails_.iface[0].mtu);
  return c;
}

int PublisherMedium::Links::restore(int rail, const Interface& iface, bool) {
  const int err = reset_sender(m_.fd_[rail].get(), iface);
  if (err == 0) m_.rails_.iface[rail] = iface;
  return err;
}

uint64_t PublisherMedium::Links::moved(int) const noexcept {
  // Both rails' sends count together: the outage ends with the first send
  // the kernel takes again.
  return m_.counters_.datagrams.get() + m_.counters_.heartbeats.get();
}

size_t PublisherMedium::poll_control(ControlHandler& h, uint64_t now) {
  size_t work = server_.poll(h, now);
  if (now >= next_announce_) {
    next_announce_ = now + opts_.announce_interval_ns;
    if (sink_.send_unsequenced(announcement_) == SendResult::kSent) counters_.announcements.add();
    ++work;
  }
  const uint64_t errors = counters_.send_errors.get() + counters_.gso_fallbacks.get();
  // A refusal may be the interface going down: look now, not at the next check.
  if (errors != errors_seen_) {
    errors_seen_ = errors;
    link_.check_soon();
  }
  work += link_.poll(links_, now);
  if (errors != errors_reported_ && now >= next_error_report_) {
    next_error_report_ = now + kErrorReportNs;
    // ENETDOWN/ENETUNREACH while the interface is down: the engine goes on,
    // the datagrams count as lost and the subscribers ask for them once it is back.
    std::string to = rails_.describe();
    for (const GroupAddress& g : also_to_) to += ", " + g.text;
    warn(opts_, fmt::format("sending to {}: {} datagrams refused ({}){}{}", to,
                            errors - errors_reported_, std::strerror(sink_.last_error()),
                            counters_.gso_fallbacks.get() ? "; GSO turned off" : "",
                            link_.counters().rails_down.get() ? "; the interface is down: subscribers recover them "
                                                                "by retransmission once it is back"
                                                              : ""));
    errors_reported_ = errors;
  }
  return work;
}

std::string PublisherMedium::describe() const {
  std::string also;
  for (const GroupAddress& g : also_to_) also += (also.empty() ? ", also to " : ", ") + g.text;
  return fmt::format("UDP {}{}{}, control {} (idle polls: {}){}{}", rails_.describe(), also, sink_.gso() ? ", GSO" : "",
                     server_.address(), server_.readiness_mode(),
                     server_.open_files_shortfall().empty() ? "" : "; warning: ", server_.open_files_shortfall());
}

std::vector<CounterGroup> PublisherMedium::counter_groups() const {
  return {counter_group("udp", counters_), counter_group("control", server_.stats()),
          counter_group("link", link_.counters())};
}

// ------------------------------------------------------------- subscriber --

namespace {
UniqueFd open_rail(const Rails& r, int i, const Options& o, bool* gro) {
  return open_receiver(r.iface[i], r.group[i], o, r.payload, gro);
}
}  // namespace

SubscriberMedium::SubscriberMedium(const Options& o)
    : opts_(o),
      rails_(Rails::resolve(o)),
      fd_{open_rail(rails_, 0, o, &gro_[0]), rails_.two ? open_rail(rails_, 1, o, &gro_[1]) : UniqueFd()},
      source_(fd_[0].get(), fd_[1].get(), gro_[0] || gro_[1] ? size_t{65536} : wire::kMaxDatagram, counters_),
      link_(rails_.iface, rails_.two ? 2 : 1, opts_, "subscriber", true) {
  if (!o.control.empty()) use_control(o.control, monotonic_ns());
}

SubscriberFit SubscriberMedium::configure(SubscriberFit c) const {
  if (rails_.two) c.reorder_wait_ns = std::max<uint64_t>(c.reorder_wait_ns, 2 * kNsPerMs);
  // Over TCP a request is never lost, only late: a segment the network lost
  // waits for TCP's retransmission (200 ms, then 400 ...). Asking again after
  // 200 ms only doubles the work, and three such "timeouts" would end in a
  // snapshot while the answer is on its way.
  c.request_timeout_ns = std::max<uint64_t>(c.request_timeout_ns, kNsPerSec);
  // The window holds what arrives while a retransmit reply is on its way:
  // over TCP on a lossy link that may be a retransmission or two (600 ms and
  // more). 2 s at udp.rate, within an eighth of the memory there is.
  uint64_t want = static_cast<uint64_t>(opts_.rate * 2.0) * rails_.payload;
  if (const auto avail = memory_available_bytes()) want = std::min(want, *avail / 8);
  c.window_bytes = std::max<size_t>(c.window_bytes, std::min<uint64_t>(want, uint64_t{256} << 20));
  return c;
}

void SubscriberMedium::start() noexcept {
  if (opts_.cut_a_for_ns) {
    const uint64_t from = monotonic_ns() + opts_.cut_a_after_ns;
    source_.set_cut(from, from + opts_.cut_a_for_ns);
  }
}

void SubscriberMedium::use_control(std::string address, uint64_t now) {
  control_ = std::move(address);
  client_ = std::make_unique<StreamControlClient>(control_);
  channel_.client = client_.get();
  down_since_ = now;
  asked_since_ = 0;
  sends_seen_ = channel_.sends;
}

SubscriberMedium::Endpoint* SubscriberMedium::endpoint(const std::string& address) noexcept {
  for (auto& ep : endpoints_)
    if (ep.address == address) return &ep;
  return nullptr;
}

void SubscriberMedium::heard_announcement(uint64_t now) {
  const AnnounceBox& box = source_.announced();
  if (box.count == announcements_seen_) return;
  announcements_seen_ = box.count;
  Announcement a;
  if (!decode_announcement(box.view(), a)) {
    sub_counters_.announce_malformed.add();
    return;
  }
  if (a.channel != opts_.channel || !opts_.control.empty()) return;
  if (opts_.announce_public_key && !signed_by_publisher(box.view(), a, now)) return;
  // Every address announced is remembered (the newest kMaxEndpoints), so a
  // subscriber whose control plane fails it has another to go to: an
  // impostor on the group does not drown out the publisher's announcements.
  Endpoint* ep = endpoint(a.address);
  const bool first_heard = !ep;
  if (!ep) {
    if (endpoints_.size() == kMaxEndpoints) {
      const auto old = std::find_if(endpoints_.begin(), endpoints_.end(),
                                    [&](const Endpoint& e) { return e.address != control_; });
      endpoints_.erase(old);
    }
    ep = &endpoints_.emplace_back(Endpoint{a.address, 0, 0, {}});
  }
  if (opts_.announce_public_key) ep->verified.assign(box.view().begin(), box.view().end());
  ep->heard = now;
  if (a.address == control_) return;
  if (control_.empty()) {
    sub_counters_.announce_followed.add();
    use_control(a.address, now);
    return;
  }
  // Another address than the one in use: a publisher restarted elsewhere, or
  // someone else on the group. Moved to only once ours has failed (check_endpoint).
  sub_counters_.announce_conflicts.add();
  // Said once per address remembered: the two members of a pair announce in
  // turn, and each turn is no news.
  if (first_heard) {
    warn(opts_, fmt::format("an announcement on {} names control {}, not {} (in use): remembered, taken only if {} "
                            "fails; set feed.control if two publishers share this group",
                            rails_.group[0].text, a.address, control_, control_));
  }
}

bool SubscriberMedium::signed_by_publisher(std::span<const std::byte> d, const Announcement& a, uint64_t now) {
  if (a.is_signed) {
    for (const Endpoint& ep : endpoints_)
      if (ep.verified.size() == d.size() && std::equal(d.begin(), d.end(), ep.verified.begin())) return true;
    if (now < next_verify_) {
      sub_counters_.announce_unverified.add();
      return false;
    }
    next_verify_ = now + kVerifyGapNs;
    if (announcement_signed_by(d, *opts_.announce_public_key)) return true;
    sub_counters_.announce_bad_signature.add();
  } else {
    sub_counters_.announce_unsigned.add();
  }
  if (a.address != forged_) {
    forged_ = a.address;
    warn(opts_, fmt::format("an announcement on {} names control {} {}: ignored (only the publisher's signed "
                            "announcements are followed, udp.announce_public_key)",
                            rails_.group[0].text, a.address,
                            a.is_signed ? "with a signature the publisher's key did not make" : "unsigned"));
  }
  return false;
}

void SubscriberMedium::check_endpoint(ControlEvents& e, uint64_t now) {
  const bool connected = client_->connected();
  if (watch_.answered) {
    asked_since_ = 0;
    stuck_.clear();
    if (Endpoint* ep = endpoint(control_)) ep->failures = 0;
  } else if (channel_.sends != sends_seen_ && !asked_since_) {
    asked_since_ = now;  // a Subscribe (or any request) now waits for its answer
  }
  sends_seen_ = channel_.sends;
  if (connected)
    down_since_ = 0;
  else if (!down_since_)
    down_since_ = now;
  if (!opts_.control.empty()) return;
  // Failing: no connection for kFollowAfterNs, or a request unanswered that
  // long, across however many connections were made and closed meanwhile;
  // at once when the peer could not prove it knows our secret.
  const bool unproven = connected && e.control_peer_failed();
  // Every address a subscriber with the publisher's key knows is a real
  // publisher's (a pair's other member): one whose connection was refused or
  // closed is left at once, not after kFollowAfterNs, when there is another.
  const bool closed = opts_.announce_public_key && !connected && !client_->last_error().empty() &&
                      endpoints_.size() > 1;
  const uint64_t since = std::min(down_since_ ? down_since_ : now, asked_since_ ? asked_since_ : now);
  if (!unproven && !closed && now - since < kFollowAfterNs) return;
  // The client is this address's alone: an error it holds is what this address did.
  const uint64_t secs = (now - since) / kNsPerSec;
  const std::string why =
      unproven ? std::string("it could not prove it knows this subscriber's secret")
      : closed ? fmt::format("its connection failed ({})", client_->last_error())
      : !client_->last_error().empty() ? fmt::format("its connections failed for {} s ({})", secs, client_->last_error())
      : connected                      ? fmt::format("connected, but no answer to its Subscribe in {} s", secs)
                                       : fmt::format("no connection in {} s", secs);
  Endpoint* cur = endpoint(control_);
  if (stuck_ != control_ && cur) {
    cur->held_until = now + (kHoldNs << std::min(cur->failures, kMaxHoldDoublings));
    ++cur->failures;
  }
  // The announced address heard last that is not held off: a publisher
  // announces for as long as it lives, so of the addresses a pair's members
  // restarted on, the live ones were heard last, and the dead ones are not
  // tried first.
  Endpoint* best = nullptr;
  for (Endpoint& ep : endpoints_)
    if (ep.address != control_ && ep.held_until <= now && (!best || ep.heard > best->heard)) best = &ep;
  if (best) {
    Endpoint& next = *best;
    warn(opts_, fmt::format("control {} left: {}; following the announced {} ({} not taken again for {} s)", control_,
                            why, next.address, control_,
                            cur && cur->held_until > now ? (cur->held_until - now + kNsPerSec / 2) / kNsPerSec : 0));
    sub_counters_.announce_left.add();
    sub_counters_.announce_followed.add();
    stuck_.clear();
    if (connected) e.on_control_disconnected();
    const std::string address = next.address;
    use_control(address, now);
    return;
  }
  if (stuck_ != control_) {
    stuck_ = control_;
    warn(opts_, fmt::format("control {} fails: {}; no other announced control address to go to: still trying it",
                            control_, why));
  }
}

int SubscriberMedium::Links::restore(int rail, const Interface& iface, bool) {
  const int err = rejoin_group(m_.fd_[rail].get(), m_.rails_.iface[rail].index, iface, m_.rails_.group[rail]);
  if (err == 0) m_.rails_.iface[rail] = iface;
  return err;
}

uint64_t SubscriberMedium::Links::moved(int rail) const noexcept {
  return (rail == 0 ? m_.counters_.rail_a_datagrams : m_.counters_.rail_b_datagrams).get();
}

size_t SubscriberMedium::poll_control(ControlEvents& e, uint64_t now) {
  heard_announcement(now);
  size_t work = link_.poll(links_, now);
  if (!client_) return work;
  watch_.e = &e;
  watch_.answered = false;
  work += client_->poll(watch_, now);
  check_endpoint(e, now);
  return work;
}

std::string SubscriberMedium::describe() const {
  return fmt::format("UDP {}{}, control {}", rails_.describe(), gro_[0] ? ", GRO" : "",
                     control_.empty() ? "as announced" : control_);
}

std::vector<CounterGroup> SubscriberMedium::counter_groups() const {
  return {counter_group("udp", counters_), counter_group("udp", sub_counters_), counter_group("link", link_.counters())};
}

}  // namespace mdcast::media::udp

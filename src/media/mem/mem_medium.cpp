#include "mdcast/media/mem/mem_medium.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "mdcast/core/error.hpp"

namespace mdcast::media::mem {

// ------------------------------------------------------------- data path --

Endpoint::Endpoint(const EndpointOptions& o)
    : cap_(std::max<size_t>(1, o.queue_capacity)), slot_(std::max<size_t>(1, o.max_datagram)), clock_(o.clock),
      // Not zeroed: a queue slot is written before it is read, and untouched pages cost nothing.
      mem_(std::make_unique_for_overwrite<std::byte[]>(cap_ * slot_)),
      len_(std::make_unique_for_overwrite<uint32_t[]>(cap_)) {}

void Endpoint::push(std::span<const std::byte> d) noexcept {
  counters_.offered.add();
  if (d.size() > slot_) {
    counters_.oversized.add();
    return;
  }
  if (count_ == cap_) {
    counters_.overflowed.add();
    return;
  }
  size_t i = head_ + count_;
  if (i >= cap_) i -= cap_;
  std::memcpy(slot(i), d.data(), d.size());
  len_[i] = static_cast<uint32_t>(d.size());
  ++count_;
  counters_.queued.add();
}

void Endpoint::clear() noexcept {
  counters_.discarded.add(count_);
  head_ = count_ = 0;
}

Endpoint& Bus::attach(const EndpointOptions& o) {
  endpoints_.push_back(std::make_unique<Endpoint>(o));
  return *endpoints_.back();
}

void Bus::detach(const Endpoint& e) noexcept {
  std::erase_if(endpoints_, [&](const auto& p) { return p.get() == &e; });
}

// ----------------------------------------------------------- control plane --

bool ControlLink::send(std::span<const std::byte> frame) {
  if (!up_) return false;
  if (drop_ > 0 && hub_->rng_.chance(drop_)) {
    hub_->counters_.requests_dropped.add();
    return true;  // lost in transit: the engine's timeout notices
  }
  to_pub_.emplace_back(frame.begin(), frame.end());
  return true;
}

bool ControlLink::pop_reply(std::vector<std::byte>& out) {
  if (to_sub_.empty()) return false;
  out = std::move(to_sub_.front());
  to_sub_.pop_front();
  queued_ -= out.size();
  return true;
}

ControlLink& ControlHub::connect(double drop_probability) {
  auto l = std::make_unique<ControlLink>();
  l->hub_ = this;
  l->id_ = next_++;
  l->drop_ = drop_probability;
  links_.push_back(std::move(l));
  return *links_.back();
}

void ControlHub::disconnect(ControlLink& l) noexcept {
  l.up_ = false;
  l.to_pub_.clear();
  l.to_sub_.clear();
  l.queued_ = 0;
}

size_t ControlHub::pump(ControlHandler& svc, uint64_t now) {
  size_t work = 0;
  for (auto& l : links_) {
    if (!l->up_) {
      if (l->known_) {
        l->known_ = false;
        svc.on_disconnect(l->id_);
        counters_.disconnects.add();
        ++work;
      }
      continue;
    }
    if (!l->known_) {
      l->known_ = true;
      svc.on_connect(l->id_, now);
      counters_.connects.add();
      ++work;
    }
    while (!l->to_pub_.empty()) {
      auto f = std::move(l->to_pub_.front());
      l->to_pub_.pop_front();
      counters_.frames_in.add();
      ++work;
      if (!svc.on_frame(l->id_, f, now, *this)) {
        // The service cut the client off: it forgets it now, the subscriber
        // notices on its next poll.
        disconnect(*l);
        l->known_ = false;
        svc.on_disconnect(l->id_);
        counters_.disconnects.add();
        break;
      }
    }
    // Drained means empty here: a subscriber takes all its replies per poll.
    if (l->up_ && l->known_ && l->to_sub_.empty() && svc.has_pending(l->id_)) {
      counters_.writable_calls.add();
      ++work;
      svc.on_writable(l->id_, now, *this);
    }
  }
  return work;
}

size_t ControlHub::queued_bytes(ClientId c) const noexcept {
  for (const auto& l : links_)
    if (l->id_ == c) return l->up_ ? l->queued_ : 0;
  return 0;
}

void ControlHub::send(ClientId c, std::vector<std::byte> frame) {
  for (auto& l : links_) {
    if (l->id_ != c) continue;
    if (l->up_) {
      l->queued_ += frame.size();
      l->to_sub_.push_back(std::move(frame));
      counters_.frames_out.add();
    }
    return;
  }
}

void ControlHub::reset_service() noexcept {
  for (auto& l : links_) {
    l->to_pub_.clear();
    l->to_sub_.clear();
    l->queued_ = 0;
    l->known_ = false;
    l->up_ = true;
    ++l->epoch_;
  }
}

size_t ControlHub::clients() const noexcept {
  return static_cast<size_t>(std::count_if(links_.begin(), links_.end(), [](const auto& l) { return l->up_; }));
}

// ------------------------------------------------------------- publisher --

PublisherFit PublisherMedium::configure(PublisherFit c) const {
  if (c.max_datagram > opts_.max_datagram)
    fail("max_datagram {} is more than the in-memory medium carries ({} bytes): lower it, or raise "
         "mem.max_datagram",
         c.max_datagram, opts_.max_datagram);
  if (c.max_datagram == 0) c.max_datagram = opts_.max_datagram;
  return c;
}

std::string PublisherMedium::describe() const {
  return fmt::format("in-memory bus ({} endpoints, {} control clients)", bus_.endpoints(), hub_.clients());
}

std::vector<CounterGroup> PublisherMedium::counter_groups() const {
  return {counter_group("bus", bus_.counters()), counter_group("control", hub_.counters())};
}

// ------------------------------------------------------------ subscriber --

SubscriberMedium::SubscriberMedium(PublisherMedium& pub, const SubscriberOptions& o)
    : pub_(pub), endpoint_(&pub.bus().attach(o.endpoint)), link_(&pub.hub().connect(o.control_drop)) {}

SubscriberMedium::~SubscriberMedium() {
  pub_.hub().disconnect(*link_);
  pub_.bus().detach(*endpoint_);
}

SubscriberFit SubscriberMedium::configure(SubscriberFit c) const {
  if (c.max_datagram == 0) c.max_datagram = std::min(wire::kMaxDatagram, endpoint_->max_datagram());
  return c;
}

size_t SubscriberMedium::poll_control(ControlEvents& e, uint64_t now) {
  size_t work = 0;
  const bool up = link_->up();
  if (up != reported_up_ || (up && link_->epoch() != epoch_)) {
    if (reported_up_) {
      e.on_control_disconnected();
      ++work;
    }
    if (up) {
      e.on_control_connected(now);
      ++work;
    }
    reported_up_ = up;
    epoch_ = link_->epoch();
  }
  while (link_->pop_reply(frame_)) {
    e.on_control_frame(frame_, now);
    ++work;
  }
  return work;
}

std::string SubscriberMedium::describe() const {
  return fmt::format("in-memory endpoint (queue of {} datagrams)", endpoint_->capacity());
}

std::vector<CounterGroup> SubscriberMedium::counter_groups() const {
  return {counter_group("mem", endpoint_->counters())};
}

}  // namespace mdcast::media::mem

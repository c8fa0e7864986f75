#include "mdcast/media/mem/mem_medium.hpp"

#include <algorithm>
#include <cstring>

namespace mdcast::media::mem {

Endpoint::Endpoint(const FaultProfile& f)
    : f_(f), rng_(f.seed), cap_(std::max<size_t>(1, f.queue_capacity)),
      mem_(std::make_unique<std::byte[]>(cap_ * wire::kMaxDatagram)), len_(std::make_unique<uint16_t[]>(cap_)),
      scratch_(wire::kMaxDatagram) {}

void Endpoint::push(std::span<const std::byte> d) noexcept {
  if (count_ == cap_) {
    ++stats_.overflowed;
    return;
  }
  const size_t slot = (head_ + count_) % cap_;
  std::memcpy(&mem_[slot * wire::kMaxDatagram], d.data(), d.size());
  len_[slot] = static_cast<uint16_t>(d.size());
  ++count_;
  ++stats_.queued;
}

void Endpoint::offer(std::span<const std::byte> d) noexcept {
  ++stats_.offered;
  // Release reordered datagrams whose time has come (they arrive after this one).
  auto release = [this] {
    while (!held_.empty() && held_.front().release_after == 0) {
      push(held_.front().bytes);
      held_.pop_front();
    }
  };
  for (auto& h : held_)
    if (h.release_after) --h.release_after;

  if (f_.burst_every && stats_.offered > f_.burst_start && (stats_.offered - f_.burst_start) % f_.burst_every == 0)
    burst_left_ = f_.burst_length;
  if (burst_left_) {
    --burst_left_;
    ++stats_.burst_lost;
    release();
    return;
  }
  if (f_.loss > 0 && rng_.chance(f_.loss)) {
    ++stats_.lost;
    release();
    return;
  }
  std::span<const std::byte> out = d;
  if (f_.truncate > 0 && rng_.chance(f_.truncate) && d.size() > 1) {
    out = d.first(rng_.below(d.size()));
    ++stats_.truncated;
  }
  if (f_.corrupt > 0 && rng_.chance(f_.corrupt) && !out.empty()) {
    std::memcpy(scratch_.data(), out.data(), out.size());
    scratch_[rng_.below(out.size())] ^= std::byte{static_cast<uint8_t>(1 + rng_.below(255))};
    out = {scratch_.data(), out.size()};
    ++stats_.corrupted;
  }
  if (f_.reorder > 0 && rng_.chance(f_.reorder)) {
    try {
      held_.push_back({std::vector<std::byte>(out.begin(), out.end()),
                       1 + static_cast<uint32_t>(rng_.below(std::max<uint32_t>(1, f_.reorder_depth)))});
      ++stats_.reordered;
      release();
      return;
    } catch (...) {
      // A test-only medium out of memory: deliver in order instead.
    }
  }
  push(out);
  if (f_.duplicate > 0 && rng_.chance(f_.duplicate)) {
    push(out);
    ++stats_.duplicated;
  }
  release();
}

void Endpoint::flush_held() noexcept {
  while (!held_.empty()) {
    push(held_.front().bytes);
    held_.pop_front();
  }
}

bool Endpoint::pop(std::span<const std::byte>& out) noexcept {
  if (count_ == 0) return false;
  out = {&mem_[head_ * wire::kMaxDatagram], len_[head_]};
  head_ = (head_ + 1) % cap_;
  --count_;
  return true;
}

Endpoint& Bus::attach(const FaultProfile& f) {
  endpoints_.push_back(std::make_unique<Endpoint>(f));
  return *endpoints_.back();
}

void Bus::detach(const Endpoint& e) {
  std::erase_if(endpoints_, [&](const auto& p) { return p.get() == &e; });
}

bool ControlLink::send(std::span<const std::byte> frame) {
  if (!up_) return false;
  if (drop_ > 0 && hub_->rng_.chance(drop_)) return true;  // lost in transit
  to_pub_.emplace_back(frame.begin(), frame.end());
  return true;
}

bool ControlLink::pop_reply(std::vector<std::byte>& out) {
  if (to_sub_.empty()) return false;
  out = std::move(to_sub_.front());
  to_sub_.pop_front();
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

void ControlHub::disconnect(ControlLink& l) { l.up_ = false; }

void ControlHub::pump(ControlHandler& svc, uint64_t now) {
  for (auto& l : links_) {
    if (!l->up_) {
      svc.on_disconnect(l->id_);
      l->to_pub_.clear();
      continue;
    }
    while (!l->to_pub_.empty()) {
      auto f = std::move(l->to_pub_.front());
      l->to_pub_.pop_front();
      if (!svc.on_frame(l->id_, f, now, *this)) {
        svc.on_disconnect(l->id_);
        l->up_ = false;
        break;
      }
    }
  }
}

void ControlHub::send(ClientId c, std::vector<std::byte> frame) {
  for (auto& l : links_)
    if (l->id_ == c && l->up_) l->to_sub_.push_back(std::move(frame));
}

}  // namespace mdcast::media::mem

// What a reader does at run time beyond the fast path in the header: the
// lane, and every decision to move its cursor other than by one record.
// Those are where a corrupt or forged word could send a reader to where
// nothing will ever be written, so each is backed by what the records
// themselves hold (history::TermReader: an index entry and the header it
// points at agreeing), and by how fast any writer could have gone.
#include <cstdint>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

static_assert(kNsPerSec % kMaxPlausibleDatagramsPerSec == 0);
constexpr uint64_t kNsPerPlausibleDatagram = kNsPerSec / kMaxPlausibleDatagramsPerSec;

uint64_t sat_add(uint64_t a, uint64_t b) noexcept {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace

// The writer was at about base at base_ns; it cannot be further now than a
// ring ahead (what publishing may lag by, generously) plus what the fastest
// possible writer wrote since. Without a base yet, anything is.
bool RingReader::plausible(uint64_t seq, uint64_t now) const noexcept {
  if (c_.base_ns == 0) return true;
  const uint64_t elapsed = now > c_.base_ns ? now - c_.base_ns : 0;
  return seq <= sat_add(sat_add(c_.base, log_.entries()), elapsed / kNsPerPlausibleDatagram);
}

// The writer commits a record before it publishes its sequence, so a
// published p is real only if the records show the writer got to p, and if
// no writer could have got there faster.
bool RingReader::proven_published(uint64_t p, uint64_t now) noexcept {
  if (p == 0) return true;  // nothing published yet
  if (log_.reached(p) && plausible(p, now)) {
    if (p >= c_.base) {
      c_.base = p;
      c_.base_ns = now;
    }
    return true;
  }
  note_implausible(c_.implausible_value, p);
  return false;
}

void RingReader::note_implausible(uint64_t& last, uint64_t v) noexcept {
  // Once per distinct value: a word stuck at a forged value is one event,
  // not one per look.
  if (v == last) return;
  last = v;
  ++c_.implausible;
}

bool RingReader::skip_ahead(uint64_t newest) noexcept {
  uint64_t seq = 0, pos = 0;
  if (!log_.resume_point(log_.seq() + 1, newest, seq, pos)) return false;
  c_.lapped += seq - log_.seq();
  log_.seek(seq, pos);
  return true;
}

RingReader::Read RingReader::overtaken() noexcept {
  const auto m = log_.mark();
  const uint64_t h = log_.horizon();
  const uint64_t now = monotonic_ns();
  uint64_t newest = published();
  if (!proven_published(newest, now)) newest = 0;
  if (log_.reclaimed_by(h)) {
    // The horizon says the writer reclaimed our record: a lap, if the
    // records prove the writer went on. Resume an eighth of a lap ahead of
    // being reclaimed again, as far as the records prove the writer is.
    if (newest == 0) {
      const uint64_t n = log_.newest_indexed();
      if (plausible(n, now)) newest = n;
    }
    if (newest > log_.seq() && skip_ahead(newest)) return Read::kLapped;
    // The horizon word alone does not move a reader.
    note_implausible(c_.implausible_horizon, h);
    return Read::kEmpty;
  }
  if (m == history::TermReader::Mark::kPending) return Read::kEmpty;  // not yet after all
  // Not reclaimed, yet our record holds what the writer never puts there (a
  // sequence or a length not ours): corruption, never followed. If the
  // writer is proven past this position, what was here is lost (the engine
  // sees the gap and recovers it); otherwise wait for the writer.
  note_implausible(c_.implausible_at, log_.seq());
  if (newest > log_.seq() && skip_ahead(newest)) return Read::kLapped;
  return Read::kEmpty;
}

RingReader::Read RingReader::read_lane(std::byte* buf, size_t& len) noexcept {
  const std::byte* s = lane_slot(lane_next_);
  const auto& marker = word(s);
  const uint64_t want = 2 * lane_next_ + 2;
  const uint64_t m1 = marker.load(std::memory_order_acquire);
  if (m1 < want) return Read::kEmpty;
  if (m1 == want) {
    // A heartbeat follows the data committed before it: hand it out once
    // that was read (it is in the ring: the next read finds it).
    if (word(s + 8).load(std::memory_order_acquire) >= log_.seq()) return Read::kEmpty;
    auto l = static_cast<size_t>(word(s + 16).load(std::memory_order_acquire));
    if (l > log_.max_datagram()) l = 0;
    copy_out(buf, s + kLaneHeader, l);
    if (marker.load(std::memory_order_relaxed) == want) {
      len = l;
      ++lane_next_;
      return Read::kOk;
    }
  }
  lane_overtaken(marker.load(std::memory_order_acquire));
  return Read::kEmpty;
}

// Lane position w (the next one the writer writes) is real only if the slot
// of w - 1 holds w - 1 or a later lap of it.
bool RingReader::proven_lane_position(uint64_t w) const noexcept {
  if (w == 0) return true;
  const uint64_t m = word(lane_slot(w - 1)).load(std::memory_order_acquire);
  if (m < 2 * (w - 1) + 2) return false;
  const uint64_t pos = (m - 1) / 2;
  return (pos - (w - 1)) % c_.lane_slots == 0;
}

uint64_t RingReader::newest_in_lane() const noexcept {
  uint64_t next = 0;
  for (size_t i = 0; i < c_.lane_slots; ++i) {
    const uint64_t m = word(c_.lane + i * c_.lane_slot_size).load(std::memory_order_acquire);
    if (m < 2 || m % 2 != 0) continue;  // empty, or being written
    const uint64_t pos = (m - 2) / 2;
    if (pos % c_.lane_slots == i && pos + 1 > next) next = pos + 1;
  }
  return next;
}

// The lane slot at lane_next_ holds a later position: the writer lapped us on
// the lane. Heartbeats repeat what they say, so missing some loses nothing:
// resume at the newest, as far as the lane's slots prove it.
void RingReader::lane_overtaken(uint64_t m) noexcept {
  if (m <= 2 * lane_next_ + 2) return;  // ours after all: the next read takes it
  const uint64_t pos = (m - 1) / 2;     // the position this slot holds (or is being written)
  const uint64_t w = word(mem_.data() + kLanePosOffset).load(std::memory_order_acquire);
  const bool w_ok = proven_lane_position(w);
  // The writer stores a lane position after the slot it names, so a real
  // marker is never beyond it.
  const bool pos_ok = (pos - lane_next_) % c_.lane_slots == 0 && (!w_ok || pos <= w);
  if (!w_ok) note_implausible(c_.implausible_lane, w);
  if (!pos_ok) note_implausible(c_.implausible_lane_at, lane_next_);
  if (w_ok && w > lane_next_) {
    lane_next_ = w - 1 > lane_next_ ? w - 1 : lane_next_ + 1;
  } else if (!w_ok && pos_ok) {
    lane_next_ = pos;
  }
  // Otherwise nothing proves where the writer is: wait for it to write here.
}

uint64_t RingReader::writer_position() const noexcept { return published() + 1; }

void RingReader::seek_to_writer() noexcept {
  const uint64_t now = monotonic_ns();
  uint64_t p = published();
  if (!proven_published(p, now)) {
    const uint64_t n = log_.newest_indexed();
    p = plausible(n, now) ? n : c_.base;
  }
  // Record p may have been reclaimed since (a writer a lap ahead): then the
  // newest the records hold.
  if (!log_.seek_after(p)) (void)log_.seek_after(log_.newest_indexed());
  const uint64_t w = word(mem_.data() + kLanePosOffset).load(std::memory_order_acquire);
  if (proven_lane_position(w)) {
    lane_next_ = w;
  } else {
    note_implausible(c_.implausible_lane, w);
    lane_next_ = newest_in_lane();
  }
}

void RingReader::refresh(uint64_t now_ns) noexcept { (void)proven_published(published(), now_ns); }

}  // namespace mdcast::media::shm

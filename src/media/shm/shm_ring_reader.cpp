// What a reader does at run time beyond the fast path in the header: the
// lane, and every decision to move its cursor other than by one record.
// Those are where a corrupt or forged word could send a reader to where
// nothing will ever be written, so each is backed by what the records
// themselves hold: an index entry and the header it points at agreeing.
#include <cstdint>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

constexpr uint64_t kClaimed = history::RetransmitRing::kClaimed;
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
  return seq <= sat_add(sat_add(c_.base, c_.entries), elapsed / kNsPerPlausibleDatagram);
}

// Where the writer put a record only: 64-byte aligned, whole before the end,
// claimed under the horizon.
const std::byte* RingReader::indexed(uint64_t seq, uint64_t& pos) const noexcept {
  pos = word(c_.index + 8 * (seq % c_.entries)).load(std::memory_order_acquire);
  const size_t off = static_cast<size_t>(pos % c_.data_bytes);
  if (off % 64 != 0 || off + c_.max_record > c_.data_bytes) return nullptr;
  if (pos >= horizon().load(std::memory_order_acquire)) return nullptr;
  return c_.data + off;
}

bool RingReader::locate(uint64_t seq, uint64_t& pos) const noexcept {
  const std::byte* r = indexed(seq, pos);
  if (r == nullptr || seq_word(r).load(std::memory_order_acquire) != seq) return false;
  // Acquire, so that the horizon is read after the whole header.
  if (history::RetransmitRing::len_word(const_cast<std::byte*>(r)).load(std::memory_order_acquire) > c_.max_datagram)
    return false;
  // Not reclaimed (the header just read might be a later lap's bytes).
  return horizon().load(std::memory_order_relaxed) <= pos + c_.data_bytes;
}

// The writer commits a record before it publishes its sequence, so a
// published p is real only if the index places p, or a later lap of its
// entry, in a record that says so, and if no writer could have got there
// faster.
bool RingReader::proven_published(uint64_t p, uint64_t now) noexcept {
  if (p == 0) return true;  // nothing published yet
  uint64_t pos = 0;
  const std::byte* r = indexed(p, pos);
  const uint64_t s = r ? seq_word(r).load(std::memory_order_acquire) & ~kClaimed : 0;
  if (r && s >= p && (s - p) % c_.entries == 0 && plausible(p, now)) {
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

// The newest committed sequence whose index entry and record agree: where a
// reader starts when the published word cannot be believed.
uint64_t RingReader::newest_in_index() const noexcept {
  uint64_t best = 0;
  for (size_t i = 0; i < c_.entries; ++i) {
    uint64_t pos = 0;
    const std::byte* r = indexed(i, pos);
    if (r == nullptr) continue;
    const uint64_t q = seq_word(r).load(std::memory_order_acquire);
    if (q != 0 && (q & kClaimed) == 0 && q % c_.entries == i && q > best) best = q;
  }
  return best;
}

bool RingReader::seek_after(uint64_t p) noexcept {
  if (p == 0) {
    seek(1, 0);
    return true;
  }
  uint64_t pos = 0;
  if (!locate(p, pos)) return false;
  const std::byte* r = c_.data + pos % c_.data_bytes;
  const auto l = history::RetransmitRing::len_word(const_cast<std::byte*>(r)).load(std::memory_order_relaxed);
  seek(p + 1, pos);
  step(l);
  return true;
}

bool RingReader::resume_point(uint64_t lo, uint64_t hi, uint64_t& seq, uint64_t& pos) const noexcept {
  if (hi < lo) return false;
  if (hi - lo >= c_.entries) lo = hi - c_.entries + 1;
  // Far enough from being reclaimed that the writer will not lap us again at
  // once (an eighth of a lap), near enough to lose little.
  const uint64_t h = horizon().load(std::memory_order_acquire);
  const uint64_t keep = c_.data_bytes - c_.data_bytes / 8;
  const uint64_t floor = h > keep ? h - keep : 0;
  auto ok = [&](uint64_t t, uint64_t& at) { return locate(t, at) && at >= floor; };
  uint64_t at = 0;
  if (!ok(hi, at)) return false;  // not even the newest: nothing here proves where the writer is
  seq = hi;
  pos = at;
  // Positions grow with sequences: the first one far enough ahead, by bisection.
  while (lo < seq) {
    const uint64_t mid = lo + (seq - lo) / 2;
    if (ok(mid, at)) {
      seq = mid;
      pos = at;
    } else {
      lo = mid + 1;
    }
  }
  return true;
}

bool RingReader::skip_ahead(uint64_t newest) noexcept {
  uint64_t seq = 0, pos = 0;
  if (!resume_point(next_ + 1, newest, seq, pos)) return false;
  c_.lapped += seq - next_;
  seek(seq, pos);
  return true;
}

RingReader::Read RingReader::overtaken() noexcept {
  const uint64_t q = seq_word(c_.data + off_).load(std::memory_order_acquire);
  const uint64_t h = horizon().load(std::memory_order_acquire);
  const uint64_t now = monotonic_ns();
  uint64_t newest = published();
  if (!proven_published(newest, now)) newest = 0;
  if (h > pos_ + c_.data_bytes) {
    // The horizon says the writer reclaimed our record: a lap, if the
    // records prove the writer went on. Resume an eighth of a lap ahead of
    // being reclaimed again, as far as the records prove the writer is.
    if (newest == 0) {
      const uint64_t n = newest_in_index();
      if (plausible(n, now)) newest = n;
    }
    if (newest > next_ && skip_ahead(newest)) return Read::kLapped;
    // The horizon word alone does not move a reader.
    note_implausible(c_.implausible_horizon, h);
    return Read::kEmpty;
  }
  if (q == 0 || q == (next_ | kClaimed)) return Read::kEmpty;  // not yet after all
  // Not reclaimed, yet our record holds what the writer never puts there (a
  // sequence or a length not ours): corruption, never followed. If the
  // writer is proven past this position, what was here is lost (the engine
  // sees the gap and recovers it); otherwise wait for the writer.
  note_implausible(c_.implausible_at, next_);
  if (newest > next_ && skip_ahead(newest)) return Read::kLapped;
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
    if (word(s + 8).load(std::memory_order_acquire) >= next_) return Read::kEmpty;
    auto l = static_cast<size_t>(word(s + 16).load(std::memory_order_acquire));
    if (l > c_.max_datagram) l = 0;
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
    const uint64_t n = newest_in_index();
    p = plausible(n, now) ? n : c_.base;
  }
  // Record p may have been reclaimed since (a writer a lap ahead): then the
  // newest the records hold.
  if (!seek_after(p)) (void)seek_after(newest_in_index());
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

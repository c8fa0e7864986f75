#include "mdcast/feed/publisher_core.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::feed {

using namespace wire;

uint64_t new_session_id() {
  for (;;) {
    uint64_t id = 0;
    const ssize_t n = ::getrandom(&id, sizeof id, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof id)) fail_errno("session id: getrandom");
    if (id != 0) return id;
  }
}

PublisherCore::PublisherCore(const PublisherConfig& cfg, std::span<std::byte> ring_memory,
                             PublisherCounters* counters)
    : cfg_(cfg), session_(cfg.session ? cfg.session : new_session_id()), books_(cfg.books), pacer_(cfg.pacing) {
  cfg_.validate();
  if (ring_memory.empty()) {
    owned_ring_ = MappedMemory::anonymous(history::RetransmitLog::memory_for(cfg.retransmit_bytes, cfg.max_datagram));
    ring_memory = owned_ring_.span();
  }
  if (ring_memory.size() < history::RetransmitLog::memory_for(0, cfg.max_datagram))
    fail("retransmit ring memory of {} bytes is too small for {}-byte datagrams", ring_memory.size(),
         cfg.max_datagram);
  ring_ = history::RetransmitLog(ring_memory, cfg.max_datagram);
  // Room for every unsent datagram plus the largest fragmented message, twice over.
  const size_t max_fragments = cfg.max_message / (datagram_capacity() - fragment::kPayload) + 2;
  if (ring_.slots() < 2 * (cfg.max_unsent + max_fragments))
    fail("retransmit ring of {} datagrams of {} bytes cannot hold max_unsent {} + {} fragments twice over; {}",
         ring_.slots(), cfg.max_datagram, cfg.max_unsent, max_fragments,
         ring_.layout() == history::RetransmitLog::Layout::kTerm
             ? "raise shm.slots (--shm-slots), the ring's size over shm"
             : "raise publisher.retransmit_bytes (--retransmit-bytes)");
  if (counters) {
    counters_ = counters;
  } else {
    owned_counters_ = std::make_unique<PublisherCounters>();
    counters_ = owned_counters_.get();
  }
  scratch_ = std::make_unique<std::byte[]>(cfg.max_message);
  heartbeat_ = std::make_unique<std::byte[]>(cfg.max_datagram);
  counters_->pacing_rate.set(static_cast<uint64_t>(pacer_.rate()));
}

namespace {
// The ring's lines are cold when a datagram is built in them (a lap ago),
// and on shm they were last read by subscribers on other cores: a store
// that waits for each line to come back costs more than the encoding. Ask
// for them ahead of the cursor, for writing, so the fetches overlap.
// PREFETCHW takes the line exclusive (a read prefetch would fetch it shared
// and the store would still wait for the upgrade); CPUs without it decode
// its opcode as a no-op.
constexpr size_t kPrefetchAhead = 256;
inline void prefetch_line_for_write(const std::byte* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*reinterpret_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}
inline void prefetch_for_write(const std::byte* p, size_t bytes) noexcept {
  for (size_t off = 0; off < bytes; off += 64) prefetch_line_for_write(p + off);
}
}  // namespace

void PublisherCore::open(uint64_t now) noexcept {
  open_ = ring_.claim(ring_.newest() + 1);
  prefetch_for_write(open_ + 64 - history::RetransmitLog::kRecordHeader, std::min(kPrefetchAhead, cfg_.max_datagram));
  open_len_ = 0;
  open_count_ = 0;
  open_since_ = now;
}

bool PublisherCore::begin_at(uint64_t next, const book::BookSet& books) noexcept {
  if (next <= ring_.newest() || open_count_ != 0 || next_unsent_ != ring_.newest() + 1) return false;
  if (books_.assign(books) != book::ApplyResult::kOk) return false;
  ring_.begin_at(next);
  first_seq_ = next_unsent_ = next;
  counters_->last_sequence.set(next - 1);
  return true;
}

void PublisherCore::tag_with(const DataKey& key) {
  if (ring_.newest() != 0 || open_count_ != 0)
    fail("data authentication must be set up before the first message (sequence {} is already committed)",
         ring_.newest() + (open_count_ != 0));
  tag_key_ = key;
  tagged_ = true;
}

void PublisherCore::seal_check(std::span<std::byte> d) const noexcept {
  if (tagged_)
    seal_tag(d, tag_key_);
  else if (cfg_.crc)
    seal_crc(d);
}

void PublisherCore::seal(uint64_t now) noexcept {
  const uint64_t seq = ring_.newest() + 1;
  std::byte* d = open_;  // the header goes in front of the messages already written
  DatagramHeader h;
  h.flags = check_flag();
  h.channel = cfg_.channel;
  h.message_count = open_count_;
  h.session = session_;
  h.sender = cfg_.sender_id;
  h.sequence = seq;
  // The time its first message was published: one-way latency measured from
  // it includes the batching delay, as the application sees it.
  h.send_time_ns = open_since_ ? open_since_ : now;
  h.length = static_cast<uint16_t>(dgram::kHeaderSize + open_len_ + trailer());
  write_header(d, h);
  seal_check({d, h.length});
  ring_.commit(seq, h.length);
  counters_->last_sequence.set(seq);
  open_count_ = 0;
  open_len_ = 0;
}

void PublisherCore::commit_open(uint64_t now) noexcept {
  if (open_count_ > 0) seal(now);
}

PublishResult PublisherCore::stage(Message& m, uint64_t now) noexcept {
  if (ring_.newest() + 1 - next_unsent_ >= cfg_.max_unsent) {
    counters_->messages_back_pressured.add();
    return PublishResult::kBackPressured;
  }
  // Heartbeats, fragments and snapshot chunks are the protocol's own: an
  // application message of those types would make a datagram no subscriber
  // accepts (and a hole in the instrument's sequence).
  if (m.type == MsgType::kHeartbeat || m.type == MsgType::kFragment || m.type == MsgType::kSnapshotChunk) {
    last_reject_ = book::ApplyResult::kNotPublishable;
    counters_->messages_rejected.add();
    return PublishResult::kRejected;
  }
  const size_t size = encoded_size(m);
  if (size == 0 || size > cfg_.max_message) return PublishResult::kTooLarge;
  if (!books_.valid_instrument(m.instrument)) {
    last_reject_ = book::ApplyResult::kBadInstrument;
    counters_->messages_rejected.add();
    return PublishResult::kRejected;
  }
  // Checked once: the verdict (and the order it found) is applied below,
  // after pacing, with nothing touching the books in between.
  const book::BookSet::Checked checked = books_.validate(m);
  if (checked.result != book::ApplyResult::kOk && checked.result != book::ApplyResult::kIgnored) {
    last_reject_ = checked.result;
    counters_->messages_rejected.add();
    return PublishResult::kRejected;
  }
  if (!pacer_.try_take(now)) {
    counters_->messages_back_pressured.add();
    return PublishResult::kBackPressured;
  }
  if (size > datagram_capacity()) return stage_fragmented(m, checked, size, now);

  // The book first, then the datagram: claiming a slot and writing it stay
  // close together, so a subscriber waiting on that slot's line (shm) takes
  // it from the writer once, not between the claim and the commit.
  books_.apply(m, checked);
  m.instrument_seq = books_.book(m.instrument).instrument_seq() + 1;
  books_.set_instrument_seq(m.instrument, m.instrument_seq);
  if (open_count_ > 0 && open_len_ + size > datagram_capacity()) seal(now);
  if (open_count_ == 0) open(now);
  encode(m, open_ + dgram::kHeaderSize + open_len_);
  open_len_ += size;
  if (dgram::kHeaderSize + open_len_ + kPrefetchAhead < cfg_.max_datagram)
    prefetch_line_for_write(open_ + dgram::kHeaderSize + open_len_ + kPrefetchAhead);
  ++open_count_;
  counters_->messages_published.add();
  // Seal when nothing more fits, or when batching is off (the input's
  // boundaries are batching by the application's flush()).
  if ((cfg_.flush_interval_ns == 0 && cfg_.boundaries == Boundaries::kTimer) ||
      open_len_ + msg::kMdHeaderSize + 4 > datagram_capacity() ||
      open_count_ == UINT16_MAX)
    seal(now);
  return PublishResult::kOk;
}

PublishResult PublisherCore::stage_fragmented(Message& m, const book::BookSet::Checked& checked, size_t size,
                                              uint64_t now) noexcept {
  commit_open(now);  // seals a datagram: the books are untouched, checked stays current
  books_.apply(m, checked);
  m.instrument_seq = books_.book(m.instrument).instrument_seq() + 1;
  books_.set_instrument_seq(m.instrument, m.instrument_seq);
  encode(m, scratch_.get());
  const size_t piece = datagram_capacity() - fragment::kPayload;
  const auto count = static_cast<uint16_t>((size + piece - 1) / piece);
  const uint32_t id = next_message_id_++;
  for (uint16_t i = 0; i < count; ++i) {
    const size_t off = size_t{i} * piece;
    const size_t n = std::min(piece, size - off);
    open(now);
    open_len_ = write_fragment(open_ + dgram::kHeaderSize, m.instrument, id, i, count, static_cast<uint32_t>(size),
                               {scratch_.get() + off, n});
    open_count_ = 1;
    seal(now);
  }
  counters_->fragments_sent.add(count);
  counters_->messages_published.add();
  return PublishResult::kOk;
}

void PublisherCore::mark_sent(uint64_t seq, size_t bytes, uint64_t now) noexcept {
  next_unsent_ = seq + 1;
  last_send_ = now;
  counters_->datagrams_sent.add();
  counters_->bytes_sent.add(bytes);
}

std::span<const std::byte> PublisherCore::build_heartbeat(uint64_t now, bool end_of_session) noexcept {
  commit_open(now);
  std::byte* d = heartbeat_.get();
  std::byte* hb = d + dgram::kHeaderSize;
  const size_t room = (datagram_capacity() - heartbeat::kEntries) / heartbeat::kEntrySize;
  const size_t want = std::min<size_t>(cfg_.heartbeat_entries, room);
  const uint32_t n_inst = books_.max_instruments();
  size_t entries = 0;
  // Rotate over instruments that have seen traffic; one full pass at most.
  for (uint32_t scanned = 0; scanned < n_inst && entries < want; ++scanned) {
    const uint32_t i = hb_cursor_;
    hb_cursor_ = hb_cursor_ + 1 == n_inst ? 0 : hb_cursor_ + 1;
    const book::OrderBook& b = books_.book(i);
    if (b.instrument_seq() == 0) continue;
    write_heartbeat_entry(hb, entries++, {i, b.instrument_seq(), b.checksum()});
  }
  const size_t mlen = write_heartbeat_header(hb, ring_.newest(), books_.global_checksum(), n_inst,
                                             static_cast<uint16_t>(entries));
  DatagramHeader h;
  h.flags = static_cast<uint8_t>(kFlagUnsequenced | check_flag() | (end_of_session ? kFlagEndOfSession : 0));
  h.channel = cfg_.channel;
  h.message_count = 1;
  h.session = session_;
  h.sender = cfg_.sender_id;
  h.sequence = ring_.newest();
  h.send_time_ns = now;
  h.length = static_cast<uint16_t>(dgram::kHeaderSize + mlen + trailer());
  write_header(d, h);
  seal_check({d, h.length});
  return {d, h.length};
}

}  // namespace mdcast::feed

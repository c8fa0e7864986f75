// What the recorder and replayer tests share: a scratch folder, datagrams of
// book messages, reading a recording back whole.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "mdcast/record/reader.hpp"
#include "support.hpp"

namespace mdcast::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("mdcast-record-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  [[nodiscard]] std::string base() const { return (path / "feed").string(); }
};

inline wire::Message definition(uint32_t inst) {
  const char symbol[2] = {static_cast<char>('A' + inst), 0};
  return wire::Message::make_definition(inst, symbol, 1, -4);
}

inline wire::Message status(uint32_t inst, wire::TradingStatus st) {
  wire::Message m;
  m.type = wire::MsgType::kTradingStatus;
  m.instrument = inst;
  m.status = {st};
  return m;
}

// Datagram `seq` of a small feed: the first defines instruments 0-2 and opens
// them; every one adds order `seq` to instrument seq % 3.
inline Bytes feed_datagram(uint64_t seq, uint64_t session = 7) {
  DatagramBuilder b(seq, session);
  if (seq == 1)
    for (uint32_t i = 0; i < 3; ++i) b.add(definition(i)).add(status(i, wire::TradingStatus::kTrading));
  b.add(wire::Message::make_add(static_cast<uint32_t>(seq % 3), seq, 1000 + static_cast<int64_t>(seq), 10,
                                wire::Side::kBuy));
  return b.build();
}

struct ReadBack {
  std::vector<record::RecordedFrame> frames;
  std::vector<std::vector<std::byte>> payloads;  // each frame's bytes, kept
  record::ReadResult end = record::ReadResult::kEnd;
};

inline ReadBack read_all(const std::string& path) {
  record::RecordingReader r(path);
  ReadBack out;
  record::RecordedFrame f;
  while ((out.end = r.next(f)) == record::ReadResult::kFrame) {
    out.payloads.emplace_back(f.datagram.begin(), f.datagram.end());
    f.datagram = {};
    f.marker.messages = {};  // views the reader's buffer: valid until the next call only
    out.frames.push_back(f);
  }
  return out;
}

}  // namespace mdcast::test

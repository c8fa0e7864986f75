// The field-by-field printer behind mdcast-pcap-decode (pcap_decode.cpp): a
// datagram, announcement or control frame decoded with mdcast's own decoders
// and written as `tshark -T fields -E occurrence=a -E aggregator='|'` writes
// the Wireshark dissector's fields (tools/wireshark/mdcast.lua).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mdcast::test::pcap {

using Bytes = std::span<const std::byte>;

// The dissector's fields in the order the test passes them to tshark (-e).
[[nodiscard]] std::span<const std::string_view> fields() noexcept;

// One packet's fields, each field's values in the order they were added.
class Packet {
 public:
  // Exits with status 2 for a field missing from fields() (a bug here).
  void add(std::string_view field, std::string value);
  // The dissector claims the packet even where it adds no field.
  void mark_present() { present_ = true; }
  [[nodiscard]] bool present() const { return present_; }
  // frame number, then every field of fields(), tab-separated.
  void print(FILE* out, uint64_t frame) const;

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  bool present_ = false;
};

// Counts by kind (udp.datagrams, msg.add-order, ctl.subscribe, malformed, ...).
struct Summary {
  std::map<std::string, uint64_t> counts;
  void count(const std::string& key, uint64_t n = 1) { counts[key] += n; }
};

// What a recording's session markers tell about the send times of later
// datagrams: the recording host's CLOCK_REALTIME - CLOCK_MONOTONIC, per session.
struct Clocks {
  std::map<uint64_t, int64_t> offsets;
  int64_t capture_ns = 0;  // the packet's capture time (ns since the epoch)
};

class Decoder {
 public:
  explicit Decoder(Summary& s) : sum_(s) {}
  // The capture time of the packets that follow (for mdcast.send_wall).
  void set_capture_time(int64_t ns) noexcept { clocks_.capture_ns = ns; }
  // A UDP payload the dissector takes: one datagram, several back to back
  // (a GSO send captured before segmentation), or an announcement.
  void udp_payload(Packet& p, Bytes payload);
  // One complete control frame (as FrameAssembler cut it).
  void frame(Packet& p, Bytes frame);
  // A datagram header's magic and version at the start of b.
  [[nodiscard]] static bool looks_like_header(Bytes b) noexcept;

 private:
  Summary& sum_;
  Clocks clocks_;
};

}  // namespace mdcast::test::pcap

#include "plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::app::bench {

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

}  // namespace

Plan make_plan(const Settings& s, const BenchArgs& a, const PlanDefaults& d) {
  Plan p;
  if (!a.sections.empty()) {
    p.c2c = p.raw = p.latency = p.throughput = p.fanout = false;
    for (const auto& x : split(a.sections)) {
      if (x == "c2c") p.c2c = true;
      else if (x == "raw") p.raw = true;
      else if (x == "latency") p.latency = true;
      else if (x == "throughput") p.throughput = true;
      else if (x == "fanout") p.fanout = true;
      else if (x == "control") p.control = true;
      else if (x == "relay") p.relay = true;
      else fail("--sections: '{}' is not one of c2c, raw, latency, throughput, fanout, control, relay", x);
    }
  }
  if (a.control_clients > kMaxControlClients)
    fail("--control-clients: {} is more than the {} the load client opens", a.control_clients, kMaxControlClients);
  p.control = p.control || a.control_clients > 0;
  p.control_clients = a.control_clients > 0 ? a.control_clients : 1024;
  if (!a.control_rate.empty()) p.control_rate = parse_rate(a.control_rate);
  if (p.control_rate <= 0) fail("--control-rate must be positive");
  for (const auto& r : split(a.rates.empty() ? d.rates : a.rates)) {
    const double v = parse_rate(r);
    if (v <= 0) fail("--rates: '{}' must be a positive rate", r);
    p.rates.push_back(v);
  }
  for (uint32_t n : parse_id_list(a.fanout.empty() ? (a.quick ? d.quick_fanout : d.fanout) : a.fanout)) {
    if (n == 0 || n > 64) fail("--fanout: {} subscribers is outside 1..64", n);
    p.fanout_counts.push_back(n);
  }
  p.fanout_rate = a.fanout_rate.empty() ? (a.quick ? d.quick_fanout_rate : d.fanout_rate) : parse_rate(a.fanout_rate);
  if (p.fanout_rate <= 0) fail("--fanout-rate must be positive");
  p.orders = a.flow == "orders";
  const uint64_t warm = a.warmup.empty() ? (a.quick ? 200 * kNsPerMs : kNsPerSec) : parse_duration(a.warmup);
  const uint64_t dur = a.duration.empty() ? (a.quick ? 500 * kNsPerMs : 5 * kNsPerSec) : parse_duration(a.duration);
  if (dur == 0) fail("--duration must be positive");
  p.lat_window = {warm, dur};
  p.fan_window = {warm / 2, std::max<uint64_t>(dur / 2, 200 * kNsPerMs)};
  p.probe_window = {std::max<uint64_t>(warm / 4, 100 * kNsPerMs), std::clamp<uint64_t>(dur / 4, 250 * kNsPerMs, 2 * kNsPerSec)};
  p.c2c_round_trips = a.quick ? 100'000 : 2'000'000;
  p.c2c_warmup = p.c2c_round_trips / 10;
  p.probe_steps = a.quick ? 2 : 6;
  p.flush_interval_ns = s.pub.flush_interval_ns;
  p.control_poll_ns = parse_duration(a.control_poll);
  return p;
}

std::string rate_key(double r) {
  return r >= 1e6 && std::fmod(r, 1e6) == 0 ? fmt::format("{}M", r / 1e6)
         : r >= 1e3 && std::fmod(r, 1e3) == 0 ? fmt::format("{}k", r / 1e3)
                                               : fmt::format("{}", r);
}

}  // namespace mdcast::app::bench

// A publisher's subscriber table (feed/subscriber_table.hpp) as JSON and
// Prometheus families (export.hpp).
#include <arpa/inet.h>

#include <fmt/format.h>

#include <optional>

#include "mdcast/stats/export.hpp"

namespace mdcast::stats {
namespace {

using feed::SubscriberRow;

std::string process_labels(const CountersSnapshot& s) {
  return fmt::format("pid=\"{}\",role=\"{}\",name=\"{}\",medium=\"{}\"", s.pid, prometheus_label_value(s.role),
                     prometheus_label_value(s.name), prometheus_label_value(s.medium));
}

std::string ipv4_text(uint64_t host_order) {
  in_addr a{htonl(static_cast<uint32_t>(host_order))};
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::string peer_text(const SubscriberRow& r) {
  if (r.flags & SubscriberRow::kUnixPeer) return fmt::format("uid {}", r.peer);
  if (r.flags & SubscriberRow::kTcpPeer) return fmt::format("{}:{}", ipv4_text(r.peer), r.port);
  return {};
}

// The age of its last status report; nullopt before the first (or without now).
std::optional<uint64_t> status_age(const SubscriberRow& r, uint64_t now_ns) {
  if (r.report_ns == 0 || now_ns == 0) return std::nullopt;
  return now_ns > r.report_ns ? now_ns - r.report_ns : 0;
}

struct Metric {
  std::string_view name;  // after mdcast_subscriber_
  std::string_view type;
  std::string_view help;
  uint64_t SubscriberRow::*field;
};
// Labels that stay for a subscriber's life only; values are values.
constexpr Metric kMetrics[] = {
    {"position", "gauge", "a publisher's view: the next sequence this subscriber delivers, from its last status report",
     &SubscriberRow::position},
    {"lag", "gauge", "a publisher's view: datagrams the publisher committed that this subscriber had not delivered "
                     "(publisher's last sequence - reported position + 1)",
     &SubscriberRow::lag},
    {"reported_lag", "gauge", "a publisher's view: datagrams this subscriber said it had seen but not delivered",
     &SubscriberRow::reported_lag},
    {"drops_total", "counter", "a publisher's view: gaps this subscriber reported", &SubscriberRow::drops},
    {"retransmit_requests_total", "counter", "a publisher's view: retransmit requests this subscriber made",
     &SubscriberRow::retransmit_requests},
    {"datagrams_retransmitted_total", "counter", "a publisher's view: datagrams retransmitted to this subscriber",
     &SubscriberRow::datagrams_retransmitted},
    {"snapshot_requests_total", "counter", "a publisher's view: snapshots this subscriber asked for",
     &SubscriberRow::snapshot_requests},
    {"recoveries_total", "counter",
     "a publisher's view: retransmits answered with datagrams and snapshots sent whole to this subscriber",
     &SubscriberRow::recoveries},
    {"refused_total", "counter", "a publisher's view: requests of this subscriber answered with an error",
     &SubscriberRow::refused},
};

struct LatencyMetric {
  std::string_view name;
  std::string_view help;
  uint64_t SubscriberRow::*field;
};
constexpr LatencyMetric kLatencyMetrics[] = {
    {"p50", "median", &SubscriberRow::latency_p50_ns},
    {"p99", "99th percentile", &SubscriberRow::latency_p99_ns},
    {"max", "maximum", &SubscriberRow::latency_max_ns},
};

}  // namespace

std::string subscriber_name(const SubscriberRow& r) {
  if (!r.identity_view().empty()) return std::string(r.identity_view());
  if ((r.flags & SubscriberRow::kUnixPeer) && r.pid) return fmt::format("pid {}", r.pid);
  if (r.flags & SubscriberRow::kTcpPeer) return "tcp " + peer_text(r);
  return fmt::format("client {}", r.client - 1);  // the row holds the id + 1
}

std::string subscriber_json(const CountersSnapshot::Subscriber& x, uint64_t now_ns) {
  const SubscriberRow& r = x.row;
  const auto age = status_age(r, now_ns);
  return fmt::format(
      "{{\"slot\":{},\"channel\":{},\"identity\":{},\"authenticated\":{},\"subscriber_pid\":{},\"peer\":{},"
      "\"subscribed\":{},\"position\":{},\"lag\":{},\"reported_lag\":{},\"drops\":{},\"capacity\":{},"
      "\"retransmit_requests\":{},\"datagrams_retransmitted\":{},\"snapshot_requests\":{},\"recoveries\":{},"
      "\"refused\":{},\"status_age_ns\":{},\"connected_ns\":{},\"latency\":{},\"whole\":{}}}",
      x.slot, r.channel, json_string(r.identity_view()), (r.flags & SubscriberRow::kAuthenticated) ? "true" : "false",
      r.pid ? std::to_string(r.pid) : "null", json_string(peer_text(r)),
      (r.flags & SubscriberRow::kSubscribed) ? "true" : "false", r.position, r.lag, r.reported_lag, r.drops,
      r.capacity, r.retransmit_requests, r.datagrams_retransmitted, r.snapshot_requests, r.recoveries, r.refused,
      age ? std::to_string(*age) : "null", r.connected_ns,
      r.latency_count == 0 ? std::string("null")
                           : fmt::format("{{\"count\":{},\"p50_ns\":{},\"p99_ns\":{},\"max_ns\":{}}}", r.latency_count,
                                         r.latency_p50_ns, r.latency_p99_ns, r.latency_max_ns),
      x.whole ? "true" : "false");
}

std::string loss_json(const CountersSnapshot::Loss& x) {
  const feed::LossRecord& r = x.record;
  const bool open = r.closed_ns == 0;
  return fmt::format("{{\"gap\":{},\"channel\":{},\"session\":{},\"first_seq\":{},\"datagrams\":{},"
                     "\"detected_ns\":{},\"how\":{},\"recovery_ns\":{},\"retransmitted\":{},\"whole\":{}}}",
                     r.ordinal, r.channel, r.session, r.first_seq, r.datagrams, r.detected_ns,
                     json_string(feed::to_string(r.method())),
                     open ? std::string("null") : std::to_string(r.closed_ns - r.detected_ns), r.retransmitted,
                     x.whole ? "true" : "false");
}

std::string subscribers_prometheus(const std::vector<CountersSnapshot>& snaps, uint64_t now_ns) {
  std::vector<std::string> labels;  // per (process, row), in the same order for every family
  std::vector<const SubscriberRow*> rows;
  for (const auto& s : snaps) {
    const std::string p = process_labels(s);
    for (const auto& x : s.subscribers) {
      labels.push_back(fmt::format("{},channel=\"{}\",slot=\"{}\",identity=\"{}\",subscriber_pid=\"{}\"", p,
                                   x.row.channel, x.slot, prometheus_label_value(x.row.identity_view()),
                                   x.row.pid ? std::to_string(x.row.pid) : std::string()));
      rows.push_back(&x.row);
    }
  }
  if (rows.empty()) return {};
  std::string out;
  for (const Metric& m : kMetrics) {
    out += fmt::format("# HELP mdcast_subscriber_{} {}\n# TYPE mdcast_subscriber_{} {}\n", m.name, m.help, m.name,
                       m.type);
    for (size_t i = 0; i < rows.size(); ++i)
      out += fmt::format("mdcast_subscriber_{}{{{}}} {}\n", m.name, labels[i], rows[i]->*m.field);
  }
  std::string ages;
  for (size_t i = 0; i < rows.size(); ++i)
    if (const auto age = status_age(*rows[i], now_ns))
      ages += fmt::format("mdcast_subscriber_status_age_seconds{{{}}} {}\n", labels[i], prometheus_value(*age, Unit::kNanoseconds));
  if (!ages.empty())
    out += "# HELP mdcast_subscriber_status_age_seconds a publisher's view: time since this subscriber's last status "
           "report (reports come every 250 ms)\n# TYPE mdcast_subscriber_status_age_seconds gauge\n" + ages;
  // Only subscribers that reported one: a 0 would read as a fast subscriber.
  for (const LatencyMetric& m : kLatencyMetrics) {
    std::string lines;
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i]->latency_count != 0)
        lines += fmt::format("mdcast_subscriber_latency_{}_seconds{{{}}} {}\n", m.name, labels[i],
                             prometheus_value(rows[i]->*m.field, Unit::kNanoseconds));
    if (!lines.empty())
      out += fmt::format("# HELP mdcast_subscriber_latency_{0}_seconds a publisher's view: the one-way latency {1} this "
                         "subscriber's application reported, since it started\n"
                         "# TYPE mdcast_subscriber_latency_{0}_seconds gauge\n",
                         m.name, m.help) +
             lines;
  }
  return out;
}

}  // namespace mdcast::stats

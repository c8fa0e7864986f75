// PublisherMedium / SubscriberMedium: the verbs pieces put together, and the
// control duty that watches them (recovery, diagnostics).
#include "mdcast/media/verbs/verbs_medium.hpp"


#include <algorithm>

#include "mdcast/core/error.hpp"
#include "mdcast/history/slot_log.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs {

using detail::log_line;

Options resolve_options(Options o, bool publisher) {
  if (o.local_ip.empty()) {
    if (o.device.empty()) {
      // Nothing configured: the first RoCE IPv4 GID on the host, if there is exactly one device.
      const auto all = local_addresses();
      for (const auto& a : all)
        if (a.gid_index == o.gid_index && a.port == o.port) {
          o.local_ip = a.ip;
          o.device = a.device;
          break;
        }
      // No device at all is the common case off a fabric: say that, as
      // `mdcast doctor` does, rather than ask for an address there is none of.
      if (o.local_ip.empty() && !rdma_device_present())
        fail("no RDMA device on this host: the verbs medium needs InfiniBand or RoCE, or Soft-RoCE (rdma_rxe); "
             "`mdcast doctor --medium verbs` says how to get one. Shared memory and UDP multicast need none");
      if (o.local_ip.empty())
        fail("no local address: set local_ip, or device/port/gid_index of a RoCE GID that maps an IPv4 address "
             "({} RDMA device(s) with IPv4 GIDs found here)",
             all.size());
    } else {
      auto ip = address_of(o.device, o.port, o.gid_index);
      if (!ip)
        fail("device {} port {} GID index {} maps no IPv4 address (InfiniBand, or no address on the netdev): "
             "set local_ip",
             o.device, o.port, o.gid_index);
      o.local_ip = *ip;
    }
  }
  if (o.control_ip.empty()) {
    if (!publisher) fail("control_ip (the publisher's control address) is required for a subscriber");
    o.control_ip = o.local_ip;
  }
  return o;
}

// ------------------------------------------------------------- publisher --

PublisherMedium::PublisherMedium(const Options& opts) : opts_(resolve_options(opts, true)) {
  sink_ = std::make_unique<VerbsSink>(opts_);
  VerbsControlServer::Ring ring{sink_->context(), sink_->pd(), sink_->ring_mr(), sink_->ring_memory()};
  server_ = std::make_unique<VerbsControlServer>(opts_, ring, opts_.control_limits);
  link_ = std::make_unique<LinkWatch>(sink_->context(), sink_->device().port, opts_, "publisher", false);
  links_.s = sink_.get();
  log_line(opts_.log, describe());
}

PublisherFit PublisherMedium::configure(PublisherFit cfg) const {
  if (cfg.max_datagram > sink_->max_datagram())
    fail("max_datagram {} is more than the path MTU of {} carries ({} bytes): lower it or leave it 0", cfg.max_datagram,
         sink_->device().name, sink_->max_datagram());
  if (cfg.max_datagram == 0) cfg.max_datagram = sink_->max_datagram();
  cfg.retransmit_bytes = sink_->ring_memory().size();
  // A ring slot must not be rewritten while a send from it may be in flight:
  // the ring outruns the send queue plus everything the engine holds back.
  const size_t slots = (sink_->ring_memory().size() - history::SlotLog::kControlSize) /
                       history::SlotLog::slot_size_for(cfg.max_datagram);
  if (slots <= size_t{cfg.max_unsent} + opts_.send_queue_depth + 1)
    fail("retransmit ring of {} slots is too small for max_unsent {} + send_queue_depth {}: raise retransmit_bytes",
         slots, cfg.max_unsent, opts_.send_queue_depth);
  return cfg;
}

size_t PublisherMedium::poll_control(ControlHandler& svc, uint64_t now) {
  size_t work = server_->poll(svc, now);
  work += static_cast<size_t>(sink_->reap());
  // A failed send may be the port going down: look now, and leave the QP to
  // the rejoin if it is (resetting it meanwhile would only fail again).
  if (sink_->failed()) link_->check_soon();
  work += link_->poll(links_, now);
  server_->hold_closing(link_->port_down());
  if (sink_->failed() && !link_->port_down()) recover_sink(now);
  return work;
}

void PublisherMedium::recover_sink(uint64_t now) {
  // Said at most once a second: a QP that keeps failing would fill the log.
  if (now >= next_recovery_log_) {
    log_line(opts_.log, fmt::format("UD send path on {} failed ({}, error {}); resetting the QP (subscribers "
                                    "recover the lost datagrams){}",
                                    sink_->device().name, sink_->failure(), sink_->last_error(),
                                    recoveries_unlogged_ ? fmt::format("; {} more resets since the last such line",
                                                                       recoveries_unlogged_)
                                                         : ""));
    next_recovery_log_ = now + kNsPerSec;
    recoveries_unlogged_ = 0;
  } else {
    ++recoveries_unlogged_;
  }
  sink_->recover();
}

std::vector<CounterGroup> PublisherMedium::counter_groups() const {
  return {counter_group("sink", sink_->counters()), counter_group("server", server_->counters()),
          counter_group("link", link_->counters())};
}

std::string PublisherMedium::describe() const {
  return fmt::format("publisher on {}: group {} {}, qkey 0x{:08x}, max_datagram {}, inline <= {}, ring {} bytes ({}), "
                     "control {}:{}{}",
                     sink_->device().describe(), opts_.group_ip, sink_->send_only() ? "send-only" : "full member",
                     opts_.qkey, sink_->max_datagram(), sink_->max_inline(), sink_->ring_memory().size(),
                     sink_->ring_huge_pages() ? "huge pages" : "4 KiB pages", opts_.control_ip, server_->port(),
                     opts_.rdma_read ? ", RDMA READ retransmits" : "");
}

// ------------------------------------------------------------ subscriber --

SubscriberMedium::SubscriberMedium(const Options& opts) : opts_(resolve_options(opts, false)) {
  receiver_ = std::make_unique<VerbsReceiver>(opts_);
  source_.rx_ = receiver_.get();
  control_ = std::make_unique<VerbsControlClient>(opts_);
  link_ = std::make_unique<LinkWatch>(receiver_->context(), receiver_->device().port, opts_, "subscriber", true);
  links_.r = receiver_.get();
  log_line(opts_.log, describe());
}

SubscriberFit SubscriberMedium::configure(SubscriberFit cfg) const {
  cfg.max_datagram = receiver_->max_datagram();
  return cfg;
}

void SubscriberMedium::upkeep(uint64_t highest_seen, uint64_t now) {
  if (receiver_->failed()) link_->check_soon();
  (void)link_->poll(links_, now);
  control_->hold_connecting(link_->port_down());
  // While the port is down the rejoin resets the QP, once it can work again.
  if (receiver_->failed() && !link_->port_down()) {
    log_line(opts_.log, fmt::format("UD receive path on {} failed ({}); resetting the QP and re-posting the ring",
                                    receiver_->device().name, receiver_->failure()));
    receiver_->recover();
  }
  // Not one datagram, not even a heartbeat: the device drops what does not
  // match our QP (QKey, group), the group's traffic does not reach us, or
  // there is no publisher. Say so once, in words, whether or not the control
  // plane told us the publisher is ahead (a subscriber there from the start
  // never hears that it is).
  if (!silent_reported_ && receiver_->counters().datagrams.get() == 0) {
    if (silent_since_ == 0) silent_since_ = now;
    const uint64_t wait = highest_seen > 0 ? kNsPerSec : kSilentFromStartNs;
    if (now - silent_since_ >= wait) {
      silent_reported_ = true;
      log_line(opts_.log,
               fmt::format("no multicast datagram in {:.0f} s, not even a heartbeat, on {} port {} from group {} with "
                           "QKey 0x{:08x}{}. Likely: a publisher on another QKey or group (every member must use the "
                           "same verbs.qkey and verbs.group), no publisher running, a path MTU below the publisher's "
                           "datagrams, or the group not reaching this port (RoCE: no route from 224.0.0.0/4 to the "
                           "RDMA netdev, or IGMP snooping without a querier; InfiniBand: no subnet manager). "
                           "`mdcast doctor --medium verbs` shows the device, group and QKey",
                           static_cast<double>(now - silent_since_) / 1e9, receiver_->device().name,
                           receiver_->device().port, opts_.group_ip, opts_.qkey,
                           highest_seen > 0 ? fmt::format(" although the publisher's control plane says it is at "
                                                          "sequence {}",
                                                          highest_seen)
                                            : ""));
    }
  }
}

size_t SubscriberMedium::poll_control(ControlEvents& e, uint64_t now) {
  const size_t work = control_->poll(e, now);
  upkeep(e.publisher_position(), now);
  return work;
}

std::vector<CounterGroup> SubscriberMedium::counter_groups() const {
  return {counter_group("rx", receiver_->counters()), counter_group("client", control_->counters()),
          counter_group("link", link_->counters())};
}

void SubscriberMedium::arm() {
  (void)receiver_->arm();
  (void)control_->arm();
}

void SubscriberMedium::sleep_until_work(uint64_t timeout_ns) {
  // Data, control completions and control connection events all wake us;
  // the timeout bounds how late the engine's own timers run.
  const int also[] = {control_->completion_fd(), control_->cm_fd()};
  const auto ms = static_cast<int>(std::min<uint64_t>(timeout_ns / kNsPerMs, static_cast<uint64_t>(opts_.blocking_timeout_ms)));
  (void)receiver_->wait(std::max(ms, 1), also);
}

ReceiverSource::ReceiverSource(SubscriberMedium& m) noexcept : m_(&m) {}

bool ReceiverSource::block(uint64_t timeout_ns) noexcept {
  if (!m_->opts_.adaptive) return false;
  if (!armed_) {
    m_->arm();
    armed_ = true;
    return true;  // poll once more: a completion from before the arm raises no event
  }
  m_->sleep_until_work(timeout_ns);
  armed_ = false;
  return true;
}

std::string SubscriberMedium::describe() const {
  return fmt::format("subscriber on {}: group {}, qkey 0x{:08x}, receive ring {} x {} bytes, control {}:{}{}",
                     receiver_->device().describe(), opts_.group_ip, opts_.qkey, receiver_->ring_size(),
                     receiver_->max_datagram() + kGrhBytes, opts_.control_ip, opts_.control_port,
                     opts_.adaptive ? ", adaptive polling" : "");
}

}  // namespace mdcast::media::verbs

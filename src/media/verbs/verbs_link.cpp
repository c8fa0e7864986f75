// The port and group of a verbs data path watched, and the group joined again
// when it was lost (verbs_link.hpp). Control code: it may allocate, lock and
// throw; it never runs on the data path.
#include "mdcast/media/verbs/verbs_link.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "mdcast/core/error.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs {

using detail::log_line;

// The async events of one ibv_context. rdma_cm opens one context per device
// for the whole process, and each event is read by one reader only: so one
// object per context reads them for every watcher, and keeps per port how
// many of each kind it saw; a watcher compares with what it saw last.
class DeviceEvents {
 public:
  struct Port {
    uint64_t err = 0;      // IBV_EVENT_PORT_ERR
    uint64_t active = 0;   // IBV_EVENT_PORT_ACTIVE
    uint64_t fabric = 0;   // SM change, client re-register, LID or GID change
    const char* last_fabric = "";
  };

  explicit DeviceEvents(ibv_context* ctx) : ctx_(ctx) {
    // Events are read from the control duty, which must never block.
    if (detail::set_nonblocking(ctx->async_fd) < 0)
      fail_errno("verbs: O_NONBLOCK on the async event fd of {}", ibv_get_device_name(ctx->device));
    // What happened before anyone watched (the GID table filled at device
    // start) is no news to a watcher: counted, so that a watcher's first
    // look starts from here.
    (void)drain(nullptr, "");
  }

  static std::shared_ptr<DeviceEvents> of(ibv_context* ctx) {
    static std::mutex mu;
    static std::vector<std::weak_ptr<DeviceEvents>> all;
    const std::lock_guard lock(mu);
    std::erase_if(all, [](const auto& w) { return w.expired(); });
    for (const auto& w : all)
      if (auto p = w.lock(); p && p->ctx_ == ctx) return p;
    auto p = std::make_shared<DeviceEvents>(ctx);
    all.push_back(p);
    return p;
  }

  // Reads every pending event, acknowledging each; events not about a port
  // (a QP or CQ error of some other part of this process) are logged through
  // `log`. The counts of port `port` afterwards.
  Port poll(uint8_t port, const LogFn* log, const std::string& dev) {
    const std::lock_guard lock(mu_);
    drain(log, dev);
    return ports_[std::min<size_t>(port, ports_.size() - 1)];
  }

 private:
  bool drain(const LogFn* log, const std::string& dev) {
    bool any = false;
    ibv_async_event ev{};
    while (ibv_get_async_event(ctx_, &ev) == 0) {
      any = true;
      const ibv_event_type type = ev.event_type;
      const uint32_t qpn = ev.element.qp && (type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
                                             type == IBV_EVENT_QP_ACCESS_ERR || type == IBV_EVENT_COMM_EST ||
                                             type == IBV_EVENT_SQ_DRAINED || type == IBV_EVENT_PATH_MIG ||
                                             type == IBV_EVENT_PATH_MIG_ERR || type == IBV_EVENT_QP_LAST_WQE_REACHED)
                               ? ev.element.qp->qp_num
                               : 0;
      const int port = ev.element.port_num;
      // Every event is acknowledged, or destroying the QP/CQ it names blocks.
      ibv_ack_async_event(&ev);
      Port* p = nullptr;
      switch (type) {
        case IBV_EVENT_PORT_ERR:
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_SM_CHANGE:
        case IBV_EVENT_CLIENT_REREGISTER:
        case IBV_EVENT_LID_CHANGE:
        case IBV_EVENT_GID_CHANGE:
        case IBV_EVENT_PKEY_CHANGE:
          p = &ports_[std::clamp<size_t>(static_cast<size_t>(port), 0, ports_.size() - 1)];
          break;
        default:
          break;
      }
      // Connection establishment and drained queues are ordinary news.
      const bool benign = type == IBV_EVENT_COMM_EST || type == IBV_EVENT_SQ_DRAINED ||
                          type == IBV_EVENT_QP_LAST_WQE_REACHED || type == IBV_EVENT_SRQ_LIMIT_REACHED ||
                          type == IBV_EVENT_PATH_MIG;
      if (!p) {
        if (log && !benign)
          log_line(*log, fmt::format("{}: async event {}{} (not about a port; the part of the process it concerns "
                                     "sees the failure itself)",
                                     dev, ibv_event_type_str(type), qpn ? fmt::format(" on QP 0x{:x}", qpn) : ""));
        continue;
      }
      if (type == IBV_EVENT_PORT_ERR) ++p->err;
      else if (type == IBV_EVENT_PORT_ACTIVE) ++p->active;
      else {
        ++p->fabric;
        p->last_fabric = ibv_event_type_str(type);
      }
    }
    return any;
  }

  std::mutex mu_;  // watchers of several channels may run on several threads
  ibv_context* ctx_;
  std::array<Port, 8> ports_{};
};

namespace {
double seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }
}  // namespace

LinkWatch::LinkWatch(ibv_context* ctx, uint8_t port, const Options& o, std::string what, bool silence)
    : opts_(&o), what_(std::move(what)), dev_(fmt::format("{} port {}", ibv_get_device_name(ctx->device), port)),
      ctx_(ctx), port_(port), silence_(silence), events_(DeviceEvents::of(ctx)) {
  // A test knob (tests/system/verbs/rejoin_verbs.sh): Soft-RoCE has no subnet
  // manager, and nothing outside a process can delete its RoCE group, so
  // RDMA_CM_EVENT_MULTICAST_ERROR never comes there. When the file named here
  // appears, the watcher removes it and acts as on that event: the group is
  // left (the QP detached: on rxe the group is deleted with its last member)
  // and joined again.
  if (const char* t = std::getenv("MDCAST_VERBS_GROUP_ERROR_TRIGGER"); t && *t) trigger_ = t;
  const auto p = events_->poll(port_, nullptr, dev_);
  seen_ = {p.err, p.active, p.fabric};
}

LinkWatch::~LinkWatch() = default;

void LinkWatch::check_soon() noexcept { next_check_ = std::min(next_check_, last_check_ + kSoonNs); }

bool LinkWatch::port_active(std::string* state) const {
  ibv_port_attr a{};
  if (const int rc = ibv_query_port(ctx_, port_, &a); rc != 0) {
    *state = fmt::format("unreadable (ibv_query_port: {})", std::strerror(rc));
    return false;
  }
  *state = ibv_port_state_str(a.state);
  return a.state == IBV_PORT_ACTIVE;
}

bool LinkWatch::injected_group_error() {
  if (trigger_.empty() || ::access(trigger_.c_str(), F_OK) != 0) return false;
  (void)::unlink(trigger_.c_str());
  return true;
}

size_t LinkWatch::poll(Member& m, uint64_t now) {
  if (now < next_check_) return 0;
  last_check_ = now;
  next_check_ = now + kCheckNs;
  size_t work = 0;
  const auto p = events_->poll(port_, &opts_->log, dev_);
  CmEvents cm = m.poll_events();
  if (cm.device_removed)
    fail("{}: the RDMA device of {} was removed (RDMA_CM_EVENT_DEVICE_REMOVAL): nothing on it can be used again; "
         "restart once the device is back",
         what_, dev_);
  const bool went_down = p.err != seen_.err;
  const bool fabric = p.fabric != seen_.fabric;
  seen_ = {p.err, p.active, p.fabric};
  std::string state;
  const bool active = port_active(&state);

  if (!active) {
    if (phase_ != Phase::kPortDown) {
      lose(m, Phase::kPortDown, now, fmt::format("port {}", state));
      ++work;
    }
  } else {
    if (phase_ == Phase::kPortDown) {
      // Back: joined again at once, then with the backoff while that fails.
      phase_ = Phase::kJoinDue;
      next_try_ = now;
      retry_ = kFirstRetryNs;
      log_line(opts_->log, fmt::format("{}: {} is ACTIVE again after {:.3f} s: joining group {} again", what_, dev_,
                                       seconds(now - down_since_), opts_->group_ip));
      ++work;
    } else if (went_down) {
      // Down and up again between two looks: a port down all the same, and
      // the membership as suspect.
      counters_.down.add();
      lose(m, Phase::kJoinDue, now, "went down and came back between two looks (IBV_EVENT_PORT_ERR)");
      ++work;
    }
    const bool injected = injected_group_error();
    if (cm.multicast_errors > 0 || injected) {
      counters_.group_errors.add(static_cast<uint64_t>(std::max(cm.multicast_errors, 1)));
      lose(m, Phase::kJoinDue, now,
           injected ? "said to have lost its group (test knob MDCAST_VERBS_GROUP_ERROR_TRIGGER, as on "
                      "RDMA_CM_EVENT_MULTICAST_ERROR)"
                    : "lost its group (RDMA_CM_EVENT_MULTICAST_ERROR: deleted or failed by the subnet manager)");
      ++work;
    }
    if (fabric || cm.addr_changes > 0) {
      counters_.fabric_events.add();
      lose(m, Phase::kJoinDue, now,
           fmt::format("saw {} (memberships may be forgotten)", fabric ? p.last_fabric : "RDMA_CM_EVENT_ADDR_CHANGE"));
      ++work;
    }
  }

  if (phase_ == Phase::kJoining) {
    if (cm.joined) {
      phase_ = Phase::kUp;
      m.link_down(false);
      moved_ = m.moved();
      quiet_since_ = now;
      silence_wait_ = kSilenceNs;
      if (silence_join_) {
        counters_.silence_rejoins.add();
      } else {
        counters_.rejoins.add();
        counters_.rails_down.set(0);
        log_line(opts_->log, fmt::format("{}: group {} joined again on {}, {:.3f} s after it was lost; what was "
                                         "missed meanwhile is recovered by retransmission",
                                         what_, opts_->group_ip, dev_, seconds(now - down_since_)));
      }
      silence_join_ = false;
      ++work;
    } else if (cm.join_failed) {
      rejoin_failed(cm.error, now);
    } else if (now >= join_deadline_) {
      rejoin_failed(fmt::format("no answer to the join within {} ms", opts_->setup_timeout_ms), now);
    }
  }
  if (phase_ == Phase::kJoinDue && now >= next_try_) {
    try_rejoin(m, now);
    ++work;
  }
  if (phase_ == Phase::kUp) check_flow(m, now);
  if (phase_ == Phase::kJoining || phase_ == Phase::kJoinDue) next_check_ = now + kSoonNs;
  return work;
}

void LinkWatch::lose(Member& m, Phase to, uint64_t now, const std::string& why) {
  const bool was_up = phase_ == Phase::kUp || silence_join_;
  silence_join_ = false;
  if (to == Phase::kJoinDue && phase_ == Phase::kJoinDue) return;  // already on its way
  if (to == Phase::kPortDown) {
    counters_.down.add();
    m.link_down(true);
  } else if (phase_ == Phase::kPortDown) {
    return;  // the port is down: the rejoin waits for it anyway
  }
  if (!outage_) {  // lost again before data moved: still the same time without data
    outage_ = true;
    down_since_ = now;
  }
  phase_ = to;
  next_try_ = now;
  retry_ = kFirstRetryNs;
  counters_.rails_down.set(1);
  log_line(opts_->log,
           fmt::format("{}: {} {}: {}", what_, dev_, why,
                       to == Phase::kPortDown
                           ? fmt::format("group {} is joined again once the port is ACTIVE; what is missed meanwhile "
                                         "is recovered by retransmission",
                                         opts_->group_ip)
                           : fmt::format("joining group {} again{}", opts_->group_ip, was_up ? "" : " (restarted)")));
}

void LinkWatch::try_rejoin(Member& m, uint64_t now) {
  std::string why;
  if (const int err = m.start_rejoin(why); err != 0) {
    rejoin_failed(why.empty() ? std::string(std::strerror(err)) : why, now);
    return;
  }
  phase_ = Phase::kJoining;
  join_deadline_ = now + static_cast<uint64_t>(opts_->setup_timeout_ms) * kNsPerMs;
}

void LinkWatch::rejoin_failed(const std::string& why, uint64_t now) {
  counters_.rejoin_failures.add();
  log_line(opts_->log, fmt::format("{}: joining group {} again on {} failed ({}): retrying in {} ms", what_,
                                   opts_->group_ip, dev_, why, retry_ / kNsPerMs));
  if (silence_join_) {
    // A silence rejoin that failed is a lost group like any other.
    silence_join_ = false;
    if (!outage_) {
      outage_ = true;
      down_since_ = now;
    }
    counters_.rails_down.set(1);
  }
  phase_ = Phase::kJoinDue;
  next_try_ = now + retry_;
  retry_ = std::min(retry_ * 2, kMaxRetryNs);
}

void LinkWatch::check_flow(Member& m, uint64_t now) {
  const uint64_t moved = m.moved();
  if (moved != moved_) {
    moved_ = moved;
    quiet_since_ = now;
    silence_wait_ = kSilenceNs;
    if (outage_) {
      outage_ = false;
      counters_.down_ns.add(now - down_since_);
      log_line(opts_->log, fmt::format("{}: data on group {} again, {:.3f} s after it was lost", what_,
                                       opts_->group_ip, seconds(now - down_since_)));
    }
    return;
  }
  // Silence on a port that is up: a membership lost without an event we
  // see (a switch that forgot it, a group deleted under us). Joining again
  // is cheap; the waits double, so a publisher that is simply gone costs little.
  if (!silence_ || quiet_since_ == 0 || now - quiet_since_ < silence_wait_) return;
  const bool first = silence_wait_ == kSilenceNs;
  silence_wait_ = std::min(silence_wait_ * 2, kMaxSilenceNs);
  quiet_since_ = now;
  if (first)
    log_line(opts_->log, fmt::format("{}: nothing heard on group {} for {:.1f} s while {} is ACTIVE: joining it again",
                                     what_, opts_->group_ip, seconds(kSilenceNs), dev_));
  silence_join_ = true;
  try_rejoin(m, now);
}

}  // namespace mdcast::media::verbs

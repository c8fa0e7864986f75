// Setup helpers shared by the verbs medium's sources (private).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/media/verbs/verbs_link.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::media::verbs::detail {

// Numeric IPv4/IPv6 address (no name lookup: setup must not hang on DNS).
sockaddr_storage parse_address(const std::string& ip, uint16_t port, std::string_view what);
std::string to_string(const sockaddr* sa);

// A non-blocking event channel (its fd is polled; waits use poll(2) with a timeout).
EventChannel make_event_channel(std::string_view what);

// Next event on ch within timeout_ms, or nullptr on timeout. Throws on error.
CmEvent next_cm_event(rdma_event_channel* ch, int timeout_ms);
// An RC listener on ip:port whose events come on ch. Throws Error naming `what`.
CmId listen_rc(rdma_event_channel* ch, const std::string& ip, uint16_t port, std::string_view what);

// Non-blocking: the next event, or nullptr.
CmEvent try_cm_event(rdma_event_channel* ch);

// Waits for `want`; any other event (or a timeout) throws Error naming `what`,
// the event and its status.
CmEvent expect_cm_event(rdma_event_channel* ch, rdma_cm_event_type want, int timeout_ms, std::string_view what);

// The UD QP bring-up shared by sink and receiver: INIT with the attributes
// rdma_cm computes for this id (port, P_Key index) and OUR QKey, then RTR
// (and RTS when `send`). Throws Error naming the state that failed.
void ud_qp_to_rts(rdma_cm_id* id, ibv_qp* qp, uint32_t qkey, bool send, std::string_view what);

void log_line(const LogFn& log, std::string_view s);

// Asks to join `group` on id again (send-only when `send_only`); the answer
// comes as an event on the id's channel. 0 or the errno of the refusal.
int post_join(rdma_cm_id* id, const sockaddr_storage& group, bool send_only) noexcept;

// Drains the data cm_id's events without blocking. A MULTICAST_JOIN while
// `joining` sets joined and *ud (the caller attaches and makes its address
// handle); a MULTICAST_ERROR or UNREACHABLE while `joining` is the join's failure.
CmEvents drain_data_events(rdma_event_channel* ch, bool joining, rdma_ud_param* ud);

// The QP is in the error state (or cannot be read): it needs a reset before use.
bool qp_in_error(ibv_qp* qp) noexcept;

// "rxe0 port 1" for messages.
std::string where(rdma_cm_id* id);

int set_nonblocking(int fd);

}  // namespace mdcast::media::verbs::detail

// A foreign receiver - set up the way rdma-core's mckey sets itself up, with
// nothing of mdcast: rdma_create_qp (so rdma_cm picks the QKey,
// RDMA_UDP_QKEY), rdma_join_multicast (which attaches the QP) - hears an
// mdcast publisher on the default QKey, and nothing of one on another QKey
// (docs/protocol.md 1.4: why the default is rdma_cm's).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/media/verbs/verbs_receiver.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"
#include "mdcast/wire/datagram.hpp"
#include "verbs_proc.hpp"

namespace mv = mdcast::media::verbs;

namespace mdcast::test::verbs {
namespace {

// The next cm event within 5 s, or nullptr.
mv::CmEvent next_event(rdma_event_channel* ch) {
  pollfd p{ch->fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0) return nullptr;
  rdma_cm_event* e = nullptr;
  return rdma_get_cm_event(ch, &e) == 0 ? mv::CmEvent(e) : nullptr;
}

sockaddr_in ipv4(const std::string& ip) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// mckey's receiver: members in setup order, torn down in reverse.
struct MckeyLikeReceiver {
  static constexpr uint32_t kSlots = 64;
  static constexpr size_t kSlot = mv::kGrhBytes + 4096;
  mv::EventChannel ch{rdma_create_event_channel()};
  mv::CmId id;
  mv::ProtectionDomain pd;
  std::vector<std::byte> buf = std::vector<std::byte>(kSlots * kSlot);
  mv::MemoryRegion mr;
  mv::CompletionQueue cq;
  mv::CmQueuePair qp;
  mv::MulticastJoin join;
  uint32_t qkey = 0;  // what rdma_cm set on the QP
  size_t received = 0;

  MckeyLikeReceiver(const std::string& local, const std::string& group) {
    if (!ch) throw std::runtime_error("rdma_create_event_channel");
    ::fcntl(ch->fd, F_SETFL, ::fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(ch.get(), &raw, nullptr, RDMA_PS_UDP)) throw std::runtime_error("rdma_create_id");
    id.reset(raw);
    auto src = ipv4(local), dst = ipv4(group);
    if (rdma_resolve_addr(id.get(), reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&dst), 2000))
      throw std::runtime_error("rdma_resolve_addr");
    auto ev = next_event(ch.get());
    if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) throw std::runtime_error("no ADDR_RESOLVED");
    ev.reset();
    pd.reset(ibv_alloc_pd(id->verbs));
    mr.reset(ibv_reg_mr(pd.get(), buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE));
    cq.reset(ibv_create_cq(id->verbs, kSlots + 1, nullptr, nullptr, 0));
    if (!pd || !mr || !cq) throw std::runtime_error("pd/mr/cq");
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq.get();
    qa.qp_type = IBV_QPT_UD;
    qa.cap.max_send_wr = 1;
    qa.cap.max_recv_wr = kSlots;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(id.get(), pd.get(), &qa)) throw std::runtime_error("rdma_create_qp");
    qp.reset(id.get());
    ibv_qp_attr at{};
    ibv_qp_init_attr ia{};
    ibv_query_qp(id->qp, &at, IBV_QP_QKEY, &ia);
    qkey = at.qkey;
    for (uint32_t i = 0; i < kSlots; ++i) post(i);
    if (rdma_join_multicast(id.get(), reinterpret_cast<sockaddr*>(&dst), nullptr))
      throw std::runtime_error("rdma_join_multicast");
    ev = next_event(ch.get());
    if (!ev || ev->event != RDMA_CM_EVENT_MULTICAST_JOIN) throw std::runtime_error("no MULTICAST_JOIN");
    join = mv::MulticastJoin(id.get(), reinterpret_cast<sockaddr*>(&dst));
  }
  void post(uint32_t slot) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data() + slot * kSlot), static_cast<uint32_t>(kSlot), mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    (void)ibv_post_recv(id->qp, &wr, &bad);
  }
  void poll() {
    ibv_wc wc[16];
    const int n = ibv_poll_cq(cq.get(), 16, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status == IBV_WC_SUCCESS && (wc[i].opcode & IBV_WC_RECV)) ++received;
      post(static_cast<uint32_t>(wc[i].wr_id));
    }
  }
};

size_t send_and_count(mv::VerbsSink& sink, MckeyLikeReceiver& rx, size_t n) {
  const size_t before = rx.received;
  for (uint64_t i = 1; i <= n; ++i)
    while (sink.send(header_datagram(i), i) != media::SendResult::kSent) sink.reap();
  poll_until([&] { return rx.received - before >= n; }, [&] { rx.poll(); sink.reap(); }, 5'000);
  // Let stragglers arrive before judging "nothing".
  poll_until([] { return false; }, [&] { rx.poll(); sink.reap(); }, 300);
  return rx.received - before;
}

TEST(VerbsQKey, ForeignRdmaCmReceiverHearsTheDefaultQKeyOnly) {
  MDCAST_REQUIRE_RDMA();
  mv::Options o;
  o.local_ip = local_ip();
  o.group_ip = "239.77.1.22";
  o.retransmit_bytes = 4u << 20;
  o.log = [](std::string_view s) { std::cout << "    [verbs] " << s << '\n'; };
  MckeyLikeReceiver rx(o.local_ip, o.group_ip);
  EXPECT_EQ(rx.qkey, uint32_t{RDMA_UDP_QKEY}) << "rdma_cm's own QKey for UDP port-space ids";
  EXPECT_EQ(o.qkey, rx.qkey) << "mdcast's default is rdma_cm's";
  constexpr size_t kN = 20;
  mv::VerbsSink ours(o);
  const size_t heard = send_and_count(ours, rx, kN);
  EXPECT_EQ(heard, kN);
  auto other = o;
  other.qkey = 0x4d44434d;  // a project-specific QKey (the one before)
  mv::VerbsSink theirs(other);
  const size_t unheard = send_and_count(theirs, rx, kN);
  EXPECT_EQ(unheard, 0u);
  std::cout << fmt::format("  mckey-like receiver (QKey 0x{:08x}): {} of {} on the default QKey, {} of {} on 0x{:08x}\n",
                           rx.qkey, heard, kN, unheard, kN, other.qkey);
}

}  // namespace
}  // namespace mdcast::test::verbs

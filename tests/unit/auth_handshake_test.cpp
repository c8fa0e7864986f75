// The mutual challenge-response end to end: a real ControlService and a real
// Subscriber wired back to back, and hand-driven clients and publishers for
// what the real ones never do (prove without checking, replay, squat).
#include <gtest/gtest.h>

#include <algorithm>

#include <deque>

#include "auth_support.hpp"
#include "subscriber_support.hpp"

namespace mdcast::test {
namespace {

using feed::ClientSecret;
using feed::ControlConfig;
using feed::ControlService;
using feed::PublisherCore;
using feed::Subscriber;
using namespace wire;

constexpr uint64_t kMs = 1'000'000;
constexpr uint16_t kCh = 4;

feed::PublisherConfig pub_config() {
  feed::PublisherConfig c;
  c.channel = kCh;
  c.session = 900;
  c.max_datagram = 512;
  c.max_unsent = 8;
  c.retransmit_bytes = 64u << 10;
  c.books = kBooks;
  return c;
}

ControlConfig secured() {
  ControlConfig cc;
  cc.secrets = test_secrets();
  return cc;
}

feed::SubscriberConfig sub_cfg(std::string identity = "gold", uint8_t key_seed = 1) {
  feed::SubscriberConfig c;
  c.channel = kCh;
  c.books = kBooks;
  c.window_bytes = 1u << 20;
  c.request_timeout_ns = 50 * kMs;
  if (!identity.empty()) c.secret = std::make_shared<const ClientSecret>(identity, test_key(key_seed));
  return c;
}

CtlType type_of(const Bytes& f) { return static_cast<CtlType>(f.at(ctl::kType)); }

bool carries(const Bytes& f, const feed::SecretKey& k) {
  const auto key = k.view();
  for (size_t i = 0; i + key.size() <= f.size(); ++i)
    if (std::memcmp(f.data() + i, key.data(), key.size()) == 0) return true;
  return false;
}

// The subscriber's control channel: frames queued for the publisher.
struct Uplink : feed::ControlChannel {
  std::deque<Bytes> queue;
  std::vector<Bytes> sent;  // everything, in order
  bool send(std::span<const std::byte> f) override {
    queue.emplace_back(f.begin(), f.end());
    sent.emplace_back(f.begin(), f.end());
    return true;
  }
  std::vector<CtlType> types() const {
    std::vector<CtlType> v;
    for (const auto& f : sent) v.push_back(type_of(f));
    return v;
  }
};
// The publisher's replies, queued for the subscriber.
struct Downlink : media::ReplySink {
  std::deque<Bytes> queue;
  std::vector<std::pair<media::ClientId, Bytes>> frames;
  void send(media::ClientId c, std::vector<std::byte> f) override {
    frames.emplace_back(c, f);
    queue.push_back(std::move(f));
  }
};

class HandshakeTest : public ::testing::Test {
 protected:
  void make(ControlConfig cc, feed::SubscriberConfig sc) {
    svc_ = std::make_unique<ControlService>(cc, core_);
    sub_ = std::make_unique<Subscriber<Handler>>(sc, h_, &up_);
  }
  void connect() {
    svc_->on_connect(1, now_);
    sub_->on_control_connected(now_);
    pump();
  }
  // Moves frames both ways until nothing is left; false if the publisher cut the client off.
  bool pump() {
    while (!up_.queue.empty() || !down_.queue.empty()) {
      while (!up_.queue.empty()) {
        Bytes f = std::move(up_.queue.front());
        up_.queue.pop_front();
        if (!svc_->on_frame(1, f, now_, down_)) return false;
      }
      while (!down_.queue.empty()) {
        Bytes f = std::move(down_.queue.front());
        down_.queue.pop_front();
        sub_->on_control_frame(f, now_);
      }
    }
    return true;
  }

  uint64_t now_ = 1'000 * kMs;
  PublisherCore core_{pub_config()};
  std::unique_ptr<ControlService> svc_;
  Handler h_;
  Uplink up_;
  Downlink down_;
  std::unique_ptr<Subscriber<Handler>> sub_;
};

TEST_F(HandshakeTest, BothSidesProveThemselvesAndTheSubscriptionFollows) {
  make(secured(), sub_cfg());
  connect();
  EXPECT_TRUE(sub_->subscribed()) << sub_->last_error();
  EXPECT_TRUE(svc_->admitted(1));
  EXPECT_FALSE(svc_->admitted(2)) << "an unknown client is not admitted";
  EXPECT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kAuthHello, CtlType::kAuthProof, CtlType::kSubscribe}));
  EXPECT_EQ(svc_->counters().auth_ok.get(), 1u);
  EXPECT_EQ(svc_->counters().auth_failed.get(), 0u);
  EXPECT_EQ(sub_->counters().auth_failures.get(), 0u);
  const auto key = test_key(1);
  for (const auto& f : up_.sent) EXPECT_FALSE(carries(f, key)) << "the secret travelled";
  for (const auto& [c, f] : down_.frames) EXPECT_FALSE(carries(f, key)) << "the secret travelled";
  // A new connection proves both sides again.
  sub_->on_control_disconnected();
  svc_->on_disconnect(1);
  EXPECT_FALSE(svc_->admitted(1));
  connect();
  EXPECT_TRUE(sub_->subscribed());
  EXPECT_EQ(svc_->counters().auth_ok.get(), 2u);
}

TEST_F(HandshakeTest, EntitlementsFollowTheProvenIdentity) {
  auto sc = sub_cfg("silver", 2);
  sc.all_instruments = false;
  sc.instruments = {1, 3};
  make(secured(), sc);
  connect();
  ASSERT_TRUE(sub_->subscribed()) << sub_->last_error();
  // Asking for more than silver may have is refused as before.
  sub_->add_instruments(std::vector<uint32_t>{2}, now_);
  pump();
  const auto err = as_error(down_.frames.back().second);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::kNotEntitled);
  EXPECT_NE(err->text.find("identity 'silver' is not entitled to instrument 2"), std::string::npos) << err->text;
}

TEST_F(HandshakeTest, ASubscriberWithAnotherSecretSendsNoProof) {
  make(secured(), sub_cfg("gold", 9));
  connect();
  EXPECT_FALSE(sub_->subscribed());
  EXPECT_FALSE(sub_->subscribe_refused()) << "a peer that cannot prove itself may be an impostor: the medium moves on";
  EXPECT_TRUE(sub_->control_peer_failed());
  EXPECT_NE(sub_->peer_unproven_since(), 0u);
  EXPECT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kAuthHello})) << "its proof never leaves";
  EXPECT_NE(sub_->last_error().find("publisher could not prove it knows the secret for identity 'gold'"),
            std::string::npos)
      << sub_->last_error();
  EXPECT_EQ(sub_->counters().auth_failures.get(), 1u);
  EXPECT_FALSE(svc_->admitted(1));
  EXPECT_EQ(svc_->counters().auth_ok.get(), 0u);
  // Refused for this connection: polling does not start over.
  now_ += 10 * sub_cfg().request_timeout_ns;
  sub_->poll(now_);
  EXPECT_EQ(up_.sent.size(), 1u);
}

TEST_F(HandshakeTest, ASquatterLearnsNothingAndCannotSteerTheSubscriber) {
  make(secured(), sub_cfg());  // svc_ unused: the test answers as a squatter would
  sub_->on_control_connected(now_);
  ASSERT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kAuthHello}));
  const auto hello = std::get<AuthHello>(parse_auth(up_.sent[0], nullptr)->body);
  const uint32_t rid = load_le<uint32_t>(up_.sent[0].data() + ctl::kRequestId);
  EXPECT_EQ(hello.identity, "gold");
  // Skipping the handshake: an acknowledgement, data, an end of snapshot.
  sub_->on_control_frame(encode_control(rid, SubscribeAck{900, 5, 1, ctl::kAll}), now_);
  sub_->on_control_frame(encode_control(rid + 1, SnapshotDone{900, SnapshotStatus::kOk, 0, 7}), now_);
  EXPECT_FALSE(sub_->subscribed()) << "nothing is acted on before the publisher proved itself";
  EXPECT_EQ(sub_->session(), 0u);
  EXPECT_EQ(sub_->counters().unauthenticated_frames.get(), 2u);
  // The hello times out and is sent again with a fresh nonce.
  now_ += sub_cfg().request_timeout_ns;
  sub_->poll(now_);
  ASSERT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kAuthHello, CtlType::kAuthHello}));
  const auto again = std::get<AuthHello>(parse_auth(up_.sent[1], nullptr)->body);
  const uint32_t rid2 = load_le<uint32_t>(up_.sent[1].data() + ctl::kRequestId);
  EXPECT_NE(again.client_nonce, hello.client_nonce);
  EXPECT_NE(rid2, rid);
  // A challenge the squatter made up (it has no key) ends the conversation: no proof.
  sub_->on_control_frame(encode_auth(rid2, AuthChallenge{random_nonce(), {}}), now_);
  EXPECT_FALSE(sub_->subscribe_refused()) << "a peer that cannot prove itself may be an impostor: the medium moves on";
  EXPECT_TRUE(sub_->control_peer_failed());
  EXPECT_NE(sub_->peer_unproven_since(), 0u);
  EXPECT_EQ(up_.sent.size(), 2u) << "no proof for a publisher that did not prove itself";
  EXPECT_NE(sub_->last_error().find("wrong proof"), std::string::npos) << sub_->last_error();
}

TEST_F(HandshakeTest, APublisherThatRefusesOurProofIsAClearError) {
  make(secured(), sub_cfg());
  sub_->on_control_connected(now_);
  const auto hello = std::get<AuthHello>(parse_auth(up_.sent[0], nullptr)->body);
  const uint32_t rid = load_le<uint32_t>(up_.sent[0].data() + ctl::kRequestId);
  // A publisher that knows the key proves itself, then refuses (say, a replay check of its own).
  const auto sn = random_nonce();
  const auto k = test_key(1);
  sub_->on_control_frame(encode_auth(rid, AuthChallenge{sn, server_proof(k.view(), kCh, "gold", hello.client_nonce, sn)}),
                         now_);
  ASSERT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kAuthHello, CtlType::kAuthProof, CtlType::kSubscribe}));
  const auto proof = std::get<AuthProof>(parse_auth(up_.sent[1], nullptr)->body);
  EXPECT_TRUE(proof_equal(proof.client_proof, client_proof(k.view(), kCh, "gold", sn, hello.client_nonce)));
  const uint32_t proof_rid = load_le<uint32_t>(up_.sent[1].data() + ctl::kRequestId);
  sub_->on_control_frame(encode_control(proof_rid, ErrorReply{ErrorCode::kBadCredential, "no"}), now_);
  EXPECT_TRUE(sub_->subscribe_refused());
  EXPECT_NE(sub_->last_error().find("publisher refused the proof for identity 'gold' (bad-credential: no)"),
            std::string::npos)
      << sub_->last_error();
}

TEST_F(HandshakeTest, AnOpenPublisherIsAClearErrorNotAFallback) {
  make(ControlConfig{}, sub_cfg());
  connect();
  EXPECT_FALSE(sub_->subscribed());
  EXPECT_FALSE(sub_->subscribe_refused()) << "a peer that cannot prove itself may be an impostor: the medium moves on";
  EXPECT_TRUE(sub_->control_peer_failed());
  EXPECT_NE(sub_->peer_unproven_since(), 0u);
  EXPECT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kAuthHello})) << "never an unauthenticated Subscribe";
  EXPECT_NE(sub_->last_error().find("publisher could not prove it knows the secret for identity 'gold': it answered "
                                    "the hello with unsupported"),
            std::string::npos)
      << sub_->last_error();
  EXPECT_EQ(svc_->counters().auth_protocol_errors.get(), 1u);
}

TEST_F(HandshakeTest, AnOpenSubscriberIsToldToAuthenticate) {
  make(secured(), sub_cfg(""));
  connect();
  EXPECT_TRUE(sub_->subscribe_refused());
  EXPECT_NE(sub_->last_error().find("authenticated clients only"), std::string::npos) << sub_->last_error();
  EXPECT_EQ(svc_->counters().auth_required.get(), 1u);
  EXPECT_FALSE(svc_->admitted(1));
}

TEST_F(HandshakeTest, OpenFeedsStayOpen) {
  make(ControlConfig{}, sub_cfg(""));
  connect();
  EXPECT_TRUE(sub_->subscribed());
  EXPECT_TRUE(svc_->admitted(1));
  EXPECT_EQ(up_.types(), (std::vector<CtlType>{CtlType::kSubscribe}));
}

TEST_F(HandshakeTest, AHelloAnsweredLateIsRestartedAndStillSucceeds) {
  make(secured(), sub_cfg());
  svc_->on_connect(1, now_);
  sub_->on_control_connected(now_);
  // The filter changes while the hello is out: no second hello for that.
  sub_->add_instruments(std::vector<uint32_t>{5}, now_);
  EXPECT_EQ(up_.sent.size(), 1u);
  now_ += sub_cfg().request_timeout_ns;
  sub_->poll(now_);
  ASSERT_EQ(up_.sent.size(), 2u) << "the unanswered hello is sent again";
  ASSERT_TRUE(pump());  // the publisher answers both; only the second counts on either side
  EXPECT_TRUE(sub_->subscribed()) << sub_->last_error();
  EXPECT_TRUE(svc_->admitted(1));
}

// ---- hostile clients, driven by hand ---------------------------------------

// An authenticating subscriber trusts only its control plane: data heard
// before the acknowledgement names the session waits in the window, and is
// delivered once the acknowledgement confirms that session, never if it
// names another (a forger who spoke first).
// (Untagged data: a medium only the publisher writes, as the shm ring.)
feed::SubscriberConfig untagged(feed::SubscriberConfig c) {
  c.authenticate_data = false;
  return c;
}

TEST_F(HandshakeTest, DataBeforeTheAcknowledgementWaitsForIt) {
  make(secured(), untagged(sub_cfg()));
  Feed real;
  real.session = pub_config().session;
  real.channel = kCh;
  real.publish({real.add(1)});
  real.publish({real.add(2)});
  sub_->on_datagram(real.dg(1), feed::Rail::kA, now_);
  sub_->on_datagram(real.dg(2), feed::Rail::kA, now_);
  EXPECT_TRUE(h_.msgs.empty()) << "delivered before the control plane named the session";
  EXPECT_EQ(sub_->counters().unconfirmed_held.get(), 2u);
  // The publisher's core has published nothing: its acknowledgement says
  // last 0, and the same session; what waited is delivered, in order.
  connect();
  ASSERT_TRUE(sub_->subscribed()) << sub_->last_error();
  ASSERT_EQ(h_.msgs.size(), 2u);
  EXPECT_EQ(h_.msgs[0].seq, 1u);
  EXPECT_EQ(h_.msgs[1].seq, 2u);
}

TEST_F(HandshakeTest, DataOfAnotherSessionBeforeTheAcknowledgementIsNeverDelivered) {
  make(secured(), untagged(sub_cfg()));
  Feed forger;
  forger.session = pub_config().session + 1;
  forger.channel = kCh;
  forger.publish({forger.add(1)});
  sub_->on_datagram(forger.dg(1), feed::Rail::kA, now_);
  EXPECT_TRUE(h_.msgs.empty());
  connect();
  ASSERT_TRUE(sub_->subscribed()) << sub_->last_error();
  EXPECT_EQ(sub_->session(), pub_config().session);
  EXPECT_TRUE(h_.msgs.empty()) << "the forger's datagram reached the application";
  EXPECT_GE(sub_->counters().window_discards.get(), 1u);
}

// A feed with secrets tags its datagrams; the subscriber reads them only
// with the data key its handshake delivered, wrapped so that the key itself
// never crosses the wire. Before the key, and for anything not made with it,
// nothing is read past the tag.
TEST_F(HandshakeTest, TaggedDataIsReadOnlyWithTheKeyTheHandshakeDelivered) {
  make(secured(), sub_cfg());
  ASSERT_TRUE(core_.tagged());
  auto publish = [&](uint64_t id) {
    Message m = Message::make_add(1, id, 100, 10, Side::kBuy);
    ASSERT_EQ(core_.stage(m, now_), feed::PublishResult::kOk);
    core_.commit_open(now_);
  };
  publish(1);
  sub_->on_datagram(core_.datagram(1), feed::Rail::kA, now_);
  EXPECT_TRUE(h_.msgs.empty()) << "read before the key came";
  connect();
  ASSERT_TRUE(sub_->subscribed()) << sub_->last_error();
  EXPECT_EQ(h_.msgs.size(), 1u) << "the datagram that came before the key waited for it";
  EXPECT_EQ(sub_->counters().unverifiable.get(), 0u);
  EXPECT_EQ(down_.frames.size(), 3u) << "challenge, data key, acknowledgement";
  EXPECT_EQ(type_of(down_.frames[1].second), CtlType::kAuthDataKey);
  Bytes key(core_.data_key().begin(), core_.data_key().end());
  for (const auto& [c, f] : down_.frames)
    EXPECT_EQ(std::search(f.begin(), f.end(), key.begin(), key.end()), f.end()) << "the data key travelled";

  publish(2);
  sub_->on_datagram(core_.datagram(2), feed::Rail::kA, now_);
  EXPECT_EQ(h_.msgs.size(), 2u) << "tagged datagrams from the publisher are read";
  // The same bytes with one bit changed, the same datagram untagged, and one
  // tagged with another key: each dropped before its sequence is read.
  publish(3);
  Bytes altered(core_.datagram(3).begin(), core_.datagram(3).end());
  altered[wire::dgram::kHeaderSize + 12] ^= std::byte{1};
  sub_->on_datagram(altered, feed::Rail::kA, now_);
  Feed forger;
  forger.session = core_.session();
  forger.channel = kCh;
  for (uint32_t i = 1; i <= 3; ++i) forger.publish({forger.add(i)});
  sub_->on_datagram(forger.dg(3), feed::Rail::kA, now_);
  EXPECT_EQ(sub_->counters().bad_tags.get(), 1u);
  EXPECT_EQ(sub_->counters().untagged.get(), 1u);
  EXPECT_EQ(h_.msgs.size(), 2u);
  EXPECT_EQ(sub_->counters().highest_sequence.get(), 2u) << "a dropped datagram's sequence was looked at";
  sub_->on_datagram(core_.datagram(3), feed::Rail::kA, now_);
  EXPECT_EQ(h_.msgs.size(), 3u);
}

TEST_F(HandshakeTest, APublisherThatSendsNoDataKeyIsRefusedWithTheReason) {
  feed::PublisherConfig pc = pub_config();
  pc.authenticate_data = false;
  PublisherCore plain(pc);
  svc_ = std::make_unique<ControlService>(secured(), plain);
  sub_ = std::make_unique<Subscriber<Handler>>(sub_cfg(), h_, &up_);
  ASSERT_FALSE(plain.tagged());
  connect();
  EXPECT_FALSE(sub_->subscribed());
  EXPECT_TRUE(sub_->subscribe_refused());
  EXPECT_NE(sub_->last_error().find("sent no data key"), std::string::npos) << sub_->last_error();
  svc_.reset();  // before the core it serves
}

class HostileClientTest : public ::testing::Test {
 protected:
  HostileClientTest() : svc_(secured(), core_) {}
  // Ticks in 1 ms steps until the service answers c; returns how long that took.
  uint64_t wait_for_answer(media::ClientId c, uint64_t limit = 10'000 * kMs) {
    const uint64_t start = now_;
    const size_t before = out_.to(c).size();
    while (out_.to(c).size() == before && now_ - start < limit) svc_.tick(now_ += kMs);
    return now_ - start;
  }

  uint64_t now_ = 1'000 * kMs;
  PublisherCore core_{pub_config()};
  ControlService svc_;
  Replies out_;
};

TEST_F(HostileClientTest, AWrongProofIsAnsweredAfterADelayAndCutsTheClientOff) {
  HandClient c;
  c.key_seed = 9;  // not gold's secret; a hostile client proves without checking the publisher
  ASSERT_TRUE(c.hello(svc_, out_, now_));
  EXPECT_FALSE(c.publisher_proven());
  out_.frames.clear();
  EXPECT_TRUE(c.prove(svc_, out_, now_, 77));
  EXPECT_TRUE(out_.frames.empty()) << "no answer yet";
  EXPECT_EQ(svc_.counters().auth_failed.get(), 1u);
  // Parked: its frames are ignored.
  now_ += 50 * kMs;
  EXPECT_TRUE(svc_.on_frame(1, encode_control(3, Subscribe{kCh, 1, {}}), now_, out_));
  EXPECT_TRUE(svc_.on_frame(1, Bytes(12), now_, out_));
  EXPECT_TRUE(out_.frames.empty());
  EXPECT_EQ(svc_.counters().auth_parked_frames.get(), 2u);
  EXPECT_EQ(wait_for_answer(1), 50 * kMs) << "100 ms after the proof";
  const auto e = as_error(out_.to(1).at(0));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ErrorCode::kBadCredential);
  EXPECT_EQ(load_le<uint32_t>(out_.to(1)[0].data() + ctl::kRequestId), 77u) << "the proof's request id";
  EXPECT_EQ(svc_.counters().auth_delayed.get(), 1u);
  EXPECT_FALSE(svc_.admitted(1));
  EXPECT_FALSE(svc_.on_frame(1, encode_control(4, StatusReport{}), now_, out_)) << "then it is cut off";
}

TEST_F(HostileClientTest, AnUnknownIdentityLooksExactlyLikeAWrongSecret) {
  // Two publishers in the same state, so the delays compare.
  PublisherCore core2{pub_config()};
  ControlService svc2(secured(), core2);
  HandClient wrong;  // gold, wrong secret
  wrong.key_seed = 9;
  HandClient unknown;
  unknown.identity = "nobody";
  unknown.key_seed = 9;
  Replies out2;
  ASSERT_TRUE(wrong.hello(svc_, out_, now_));
  ASSERT_TRUE(unknown.hello(svc2, out2, now_));
  EXPECT_EQ(out_.frames.at(0).second.size(), out2.frames.at(0).second.size()) << "the same challenge";
  EXPECT_TRUE(wrong.prove(svc_, out_, now_));
  EXPECT_TRUE(unknown.prove(svc2, out2, now_));
  out_.frames.clear();
  out2.frames.clear();
  uint64_t t1 = 0, t2 = 0;
  for (uint64_t t = now_; t < now_ + 1000 * kMs && (!t1 || !t2); t += kMs) {
    svc_.tick(t);
    svc2.tick(t);
    if (!t1 && !out_.frames.empty()) t1 = t - now_;
    if (!t2 && !out2.frames.empty()) t2 = t - now_;
  }
  EXPECT_EQ(t1, t2) << "the same delay";
  ASSERT_FALSE(out_.frames.empty());
  ASSERT_FALSE(out2.frames.empty());
  auto a = as_error(out_.frames[0].second), b = as_error(out2.frames[0].second);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->code, b->code);
  std::string ta = a->text;
  ta.replace(ta.find("'gold'"), 6, "'nobody'");
  EXPECT_EQ(ta, b->text) << "the same words, but for the identity the client itself named";
  EXPECT_EQ(svc2.counters().auth_unknown_identity.get(), 1u) << "the operator still learns of it";
  EXPECT_EQ(svc_.counters().auth_unknown_identity.get(), 0u);
}

TEST_F(HostileClientTest, AReplayedProofIsRefused) {
  HandClient honest;
  ASSERT_TRUE(honest.hello(svc_, out_, now_));
  ASSERT_TRUE(honest.publisher_proven());
  const Bytes hello = encode_auth(1, AuthHello{kCh, "gold", honest.client_nonce});
  const Bytes proof = encode_auth(2, AuthProof{honest.proof()});
  ASSERT_TRUE(svc_.on_frame(1, proof, now_, out_));
  ASSERT_EQ(svc_.counters().auth_ok.get(), 1u);
  // Someone who recorded both frames replays them on a connection of its own.
  const auto first_nonce = honest.challenge->server_nonce;
  out_.frames.clear();
  ASSERT_TRUE(svc_.on_frame(2, hello, now_, out_));
  const auto ch = parse_auth(out_.to(2).at(0), nullptr);
  ASSERT_TRUE(ch);
  EXPECT_NE(std::get<AuthChallenge>(ch->body).server_nonce, first_nonce) << "a fresh server nonce";
  ASSERT_TRUE(svc_.on_frame(2, proof, now_, out_));
  EXPECT_EQ(svc_.counters().auth_ok.get(), 1u);
  EXPECT_EQ(svc_.counters().auth_failed.get(), 1u);
  ASSERT_TRUE(svc_.on_frame(2, encode_control(3, Subscribe{kCh, 2, {}}), now_, out_));
  EXPECT_FALSE(svc_.admitted(2));
  wait_for_answer(2);
  EXPECT_EQ(as_error(out_.to(2).back())->code, ErrorCode::kBadCredential);
  // The same proof on the original connection after it was used: out of order.
  EXPECT_TRUE(svc_.on_frame(1, proof, now_, out_));
  EXPECT_EQ(as_error(out_.to(1).back())->code, ErrorCode::kMalformed);
  EXPECT_EQ(svc_.counters().auth_ok.get(), 1u);
}

TEST_F(HostileClientTest, TheDelayGrowsWithFailuresAndDecays) {
  std::vector<uint64_t> delays;
  for (media::ClientId id = 10; id < 15; ++id) {
    HandClient c;
    c.id = id;
    c.key_seed = 9;
    ASSERT_TRUE(c.hello(svc_, out_, now_));
    ASSERT_TRUE(c.prove(svc_, out_, now_));
    delays.push_back(wait_for_answer(id) / kMs);
  }
  EXPECT_EQ(delays, (std::vector<uint64_t>{100, 200, 400, 800, 1600}));
  // Ten quiet seconds forget one doubling.
  now_ += 10'000 * kMs;
  HandClient c;
  c.id = 20;
  c.key_seed = 9;
  ASSERT_TRUE(c.hello(svc_, out_, now_));
  ASSERT_TRUE(c.prove(svc_, out_, now_));
  EXPECT_EQ(wait_for_answer(20) / kMs, 1600u);
  // A client that proves itself never waits, whatever the others did.
  HandClient good;
  good.id = 30;
  ASSERT_TRUE(good.authenticate(svc_, out_, now_));
  ASSERT_TRUE(svc_.on_frame(30, encode_control(5, Subscribe{kCh, 30, {}}), now_, out_));
  EXPECT_TRUE(svc_.admitted(30));
}

TEST_F(HostileClientTest, NothingButTheHandshakeBeforeIt) {
  auto code_of_last = [&](media::ClientId c) { return as_error(out_.to(c).back())->code; };
  EXPECT_TRUE(svc_.on_frame(1, encode_control(1, RetransmitRequest{900, 1, 1}), now_, out_));
  EXPECT_EQ(code_of_last(1), ErrorCode::kBadCredential);
  EXPECT_TRUE(svc_.on_frame(1, encode_auth(2, AuthProof{}), now_, out_));
  EXPECT_EQ(code_of_last(1), ErrorCode::kMalformed) << "a proof without a challenge";
  EXPECT_TRUE(svc_.on_frame(1, encode_auth(3, AuthChallenge{}), now_, out_));
  EXPECT_EQ(code_of_last(1), ErrorCode::kUnsupported);
  EXPECT_TRUE(svc_.on_frame(1, encode_auth(4, AuthHello{kCh + 1, "gold", {}}), now_, out_));
  EXPECT_EQ(code_of_last(1), ErrorCode::kUnknownChannel);
  Bytes bad = encode_auth(5, AuthHello{kCh, "gold", {}});
  bad[15] = std::byte{9};  // identity length beyond the frame
  EXPECT_TRUE(svc_.on_frame(1, bad, now_, out_));
  EXPECT_EQ(code_of_last(1), ErrorCode::kMalformed);
  // Hellos cost an HMAC each: a connection gets a few.
  HandClient c;
  c.id = 2;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.hello(svc_, out_, now_));
  EXPECT_TRUE(c.hello(svc_, out_, now_)) << "the fourth still gets a challenge";
  EXPECT_TRUE(svc_.on_frame(2, encode_auth(9, AuthHello{kCh, "gold", {}}), now_, out_));
  EXPECT_EQ(code_of_last(2), ErrorCode::kOverloaded);
  // Once proven, a second hello is out of order.
  HandClient g;
  g.id = 3;
  ASSERT_TRUE(g.authenticate(svc_, out_, now_));
  EXPECT_TRUE(svc_.on_frame(3, encode_auth(9, AuthHello{kCh, "gold", {}}), now_, out_));
  EXPECT_EQ(code_of_last(3), ErrorCode::kUnsupported);
  EXPECT_GE(svc_.counters().auth_protocol_errors.get(), 6u);
}

TEST(ControlServiceOpen, AuthFramesOnAnOpenFeedAreRefused) {
  PublisherCore core{pub_config()};
  ControlService svc(ControlConfig{}, core);
  Replies out;
  EXPECT_TRUE(svc.on_frame(1, encode_auth(1, AuthHello{kCh, "gold", {}}), 1, out));
  const auto e = as_error(out.to(1).at(0));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ErrorCode::kUnsupported);
  EXPECT_NE(e->text.find("open feed"), std::string::npos) << e->text;
  EXPECT_FALSE(svc.admitted(1));
  EXPECT_TRUE(svc.on_frame(1, encode_control(2, Subscribe{kCh, 1, {}}), 1, out));
  EXPECT_TRUE(svc.admitted(1)) << "an open feed admits on subscribe";
}

}  // namespace
}  // namespace mdcast::test

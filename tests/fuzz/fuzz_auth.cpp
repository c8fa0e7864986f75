// fuzz_auth: the authentication frames and both ends of the handshake.
//
// Input: an options byte, then frames, each a u16 length and its bytes.
//   bit 0  when the publisher sends a challenge to identity "fuzz", answer it
//          with the right proof (so mutations reach what follows the handshake)
//   bit 1  the frames go to a subscriber configured with a secret, as if a
//          publisher (or a squatter) sent them; else to a publisher's
//          ControlService with a secrets file
// Checks:
//   - parse_auth never crashes, refuses with a reason, and a parsed frame
//     re-encodes to the same bytes;
//   - publisher: no client is admitted unless it sent the right proof; every
//     reply parses; no reply carries the secret;
//   - subscriber: it sends its proof only after a challenge that proved the
//     publisher knows the secret (which the fuzzer cannot forge), and nothing
//     but hellos before that.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>

#include "fuzz_support.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/wire/auth.hpp"

using namespace mdcast;
using namespace mdcast::wire;
using namespace mdcast::fuzz;

namespace {

constexpr uint16_t kChannel = 4;

std::string key_hex() {
  std::string s;
  for (int i = 0; i < 32; ++i) s += fmt::format("{:02x}", 0xa0 + i);  // = make_corpus's
  return s;
}

void check_codec(std::span<const std::byte> f) {
  std::string why;
  const auto p = parse_auth(f, &why);
  if (!p) {
    FUZZ_CHECK(!why.empty(), "refused without a reason");
    return;
  }
  FUZZ_CHECK(is_auth_frame(f), "parsed a frame that is not an auth frame");
  const auto again = std::visit([&](const auto& b) { return encode_auth(p->request_id, b); }, p->body);
  std::vector<std::byte> want(f.begin(), f.end());
  want[6] = want[7] = std::byte{0};  // header reserved
  FUZZ_CHECK(again == want, "parsed auth frame of %zu bytes re-encodes differently (%zu bytes)", f.size(),
             again.size());
}

struct Sink : media::ReplySink {
  std::vector<std::vector<std::byte>> frames;
  void send(media::ClientId, std::vector<std::byte> f) override { frames.push_back(std::move(f)); }
};

struct Channel : media::ControlChannel {
  std::vector<std::vector<std::byte>> sent;
  bool send(std::span<const std::byte> f) override {
    sent.emplace_back(f.begin(), f.end());
    return true;
  }
};

struct NullHandler {
  void on_message(const Message&, const feed::Delivery&) noexcept {}
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

bool contains(const std::vector<std::byte>& hay, std::span<const std::byte> needle) {
  if (hay.size() < needle.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i)
    if (std::memcmp(hay.data() + i, needle.data(), needle.size()) == 0) return true;
  return false;
}

void run_publisher(Reader& in, bool auto_prove) {
  feed::PublisherConfig pc;
  pc.channel = kChannel;
  pc.session = 7;
  pc.max_datagram = 512;
  pc.max_unsent = 8;
  pc.retransmit_bytes = 64u << 10;
  pc.books = {8, 64, 8};
  feed::PublisherCore core(pc);
  feed::ControlConfig cc;
  cc.secrets = std::make_shared<const feed::PublisherSecrets>(
      feed::PublisherSecrets::parse("fuzz " + key_hex() + " 0-3\n", "fuzz.secrets"));
  const auto key = *feed::SecretKey::from_hex(key_hex());
  feed::ControlService svc(cc, core);
  Sink out;
  uint64_t now = 1'000'000'000;
  media::ClientId client = 1;
  bool proved = false;  // this connection sent the right proof
  AuthNonce cn{};
  std::string said;  // identity of the last hello
  svc.on_connect(client, now);
  while (!in.empty()) {
    const auto f = in.bytes(in.u16());
    check_codec(f);
    if (auto h = parse_auth(f, nullptr); h && std::holds_alternative<AuthHello>(h->body)) {
      cn = std::get<AuthHello>(h->body).client_nonce;
      said = std::get<AuthHello>(h->body).identity;
    }
    const size_t before = out.frames.size();
    bool keep = svc.on_frame(client, f, now, out);
    for (size_t i = before; i < out.frames.size() && keep; ++i) {
      const auto& r = out.frames[i];
      const auto a = parse_auth(r, nullptr);
      FUZZ_CHECK(a || parse_control(r, nullptr), "the publisher sent a frame that does not parse");
      FUZZ_CHECK(!contains(r, key.view()), "a reply carries the secret");
      FUZZ_CHECK(!contains(r, core.data_key()), "a reply carries the data key unwrapped");
      if (a && auto_prove && std::holds_alternative<AuthChallenge>(a->body)) {
        const auto& ch = std::get<AuthChallenge>(a->body);
        const auto proof = client_proof(key.view(), kChannel, "fuzz", ch.server_nonce, cn);
        keep = svc.on_frame(client, encode_auth(a->request_id + 1, AuthProof{proof}), now, out);
        proved = proved || (keep && said == "fuzz");
      }
    }
    FUZZ_CHECK(!svc.admitted(client) || proved, "a client was admitted without the right proof");
    now += 37'000'000;
    svc.tick(now);
    if (!keep) {  // cut off: the next frames come on a new connection
      svc.on_disconnect(client);
      svc.on_connect(++client, now);
      proved = false;
    }
  }
}

void run_subscriber(Reader& in) {
  feed::SubscriberConfig sc;
  sc.channel = kChannel;
  sc.books = {8, 64, 8};
  sc.window_bytes = 64u << 10;
  sc.max_datagram = 1024;
  sc.secret = std::make_shared<const feed::ClientSecret>(
      feed::ClientSecret::parse("fuzz " + key_hex() + "\n", "fuzz.secret"));
  Channel ctl;
  NullHandler h;
  feed::Subscriber<NullHandler> sub(sc, h, &ctl);
  uint64_t now = 1'000'000'000;
  sub.on_control_connected(now);
  while (!in.empty()) {
    const auto f = in.bytes(in.u16());
    check_codec(f);
    sub.on_control_frame(f, now);
    now += 37'000'000;
    sub.poll(now);
  }
  // The fuzzer cannot compute a server proof for this key: the subscriber
  // must have sent hellos only.
  for (const auto& s : ctl.sent) {
    const auto a = parse_auth(s, nullptr);
    FUZZ_CHECK(a && std::holds_alternative<AuthHello>(a->body), "the subscriber sent %s to an unproven publisher",
               a ? "an auth proof" : "a request");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const uint8_t opt = in.u8();
  if (opt & 2)
    run_subscriber(in);
  else
    run_publisher(in, opt & 1);
  return 0;
}

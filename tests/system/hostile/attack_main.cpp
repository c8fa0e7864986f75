// mdcast_attack SUBCOMMAND ...: see attack.hpp and README.md in this folder.
// Exit status: 0 the attack ran (what it saw is in its report), 1 it could
// not run (named on stderr), 2 this build cannot do it, 77 the host lacks
// what it needs (skip).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "attack.hpp"
#include "mdcast/core/error.hpp"

using namespace mdcast;
using namespace mdcast::attack;

int main(int argc, char** argv) {
  CLI::App app{"mdcast_attack: hostile clients of a publisher, for the hostile test suite"};
  app.require_subcommand(1);

  std::string address;
  double seconds = 3;
  std::optional<unsigned> as_uid;
  app.add_option("--as-uid", as_uid, "run the attack as this user (root only): another local account");
  auto add_address = [&](CLI::App* s) {
    s->add_option("address", address, "control address: unix:@name, tcp:host:port, or shm:NAME (read from the ring)")
        ->required();
  };

  FloodArgs flood_args;
  auto* snap = app.add_subcommand("snapshot-flood", "subscribe, then 64 KiB writes of 16-byte 'all' snapshot requests");
  auto* rtx = app.add_subcommand("retransmit-flood", "subscribe, then 64 KiB writes of whole-ring retransmit requests");
  for (auto* s : {snap, rtx}) {
    add_address(s);
    s->add_option("--seconds", flood_args.seconds, "how long");
    s->add_flag("--never-read", flood_args.never_read, "never read the replies");
  }

  unsigned clients = 4;
  auto* nr = app.add_subcommand("never-read", "K clients subscribe, ask for full snapshots, never read");
  add_address(nr);
  nr->add_option("--clients", clients, "clients");
  nr->add_option("--seconds", seconds, "how long");

  unsigned count = 1024;
  auto* idle = app.add_subcommand("idle-sockets", "N connections that send nothing");
  add_address(idle);
  idle->add_option("--count", count, "connections");
  idle->add_option("--seconds", seconds, "how long to hold them");

  uint32_t length = static_cast<uint32_t>(wire::ctl::kMaxFrame);
  bool subscribe_first = false;
  auto* half = app.add_subcommand("half-frame", "a length prefix and a few bytes, then nothing");
  add_address(half);
  half->add_option("--seconds", seconds, "how long to wait for the publisher to close");
  half->add_option("--length", length, "the length announced (default 4 MiB)");
  half->add_flag("--subscribe-first", subscribe_first, "be a subscribed client when sending it");

  uint64_t seed = 1;
  unsigned timeout_ms = 2000;
  auto* garb = app.add_subcommand("garbage", "random bytes, wrong lengths, unknown types, truncated frames");
  add_address(garb);
  garb->add_option("--seed", seed, "random seed");
  garb->add_option("--timeout-ms", timeout_ms, "how long each case waits for an answer");

  unsigned cred_clients = 1;
  auto* cred = app.add_subcommand("bad-credentials", "wrong credentials as fast as they are answered");
  add_address(cred);
  cred->add_option("--seconds", seconds, "how long");
  cred->add_option("--clients", cred_clients, "connections trying at once");

  std::string from;
  auto* subs = app.add_subcommand("subscribers", "N connections that subscribe, one after another, and hold on");
  add_address(subs);
  subs->add_option("--count", count, "connections");
  subs->add_option("--seconds", seconds, "how long to hold them once all were tried");
  subs->add_option("--from", from, "TCP source address (an IPv4 literal on this host, e.g. 127.0.0.2)");

  std::string group, interface = "lo";
  unsigned per_ms = 100;
  auto* chain = app.add_subcommand("forge-chain", "a UDP feed's group: one datagram sniffed, then the next sequences");
  chain->add_option("group", group, "GROUP:PORT")->required();
  chain->add_option("--interface", interface, "interface to hear and send on: a name or its IPv4 address (default lo)");
  chain->add_option("--seconds", seconds, "how long");
  chain->add_option("--per-ms", per_ms, "forged datagrams a millisecond");

  RingTarget ring;
  unsigned uid = 65534;
  std::string control;
  auto* sq = app.add_subcommand("squat", "create the feed's ring first, as another user, naming our own control socket");
  sq->add_option("name", ring.name, "feed name")->required();
  sq->add_option("--seconds", seconds, "how long to hold the ring and listen");
  sq->add_option("--uid", uid, "user to act as (default nobody, 65534)");
  sq->add_option("--control", control, "control address to name (default unix:@mdcast-squat-NAME-PID)");
  sq->add_option("--dir", ring.dir, "ring directory (default /dev/shm)");

  uint64_t value = uint64_t{1} << 40;
  auto* scr = app.add_subcommand("scribble-position", "overwrite the ring's published write position");
  scr->add_option("name", ring.name, "feed name")->required();
  scr->add_option("--value", value, "position to write (default 2^40)");
  scr->add_option("--seconds", seconds, "how long to keep writing it");
  scr->add_option("--dir", ring.dir, "ring directory (default: where the library looks)");

  uint64_t bytes = 4096;
  auto* tr = app.add_subcommand("truncate", "truncate the ring file under its readers and writer");
  tr->add_option("name", ring.name, "feed name")->required();
  tr->add_option("--bytes", bytes, "new file size");
  tr->add_option("--dir", ring.dir, "ring directory (default: where the library looks)");
  std::optional<unsigned> tr_uid;
  tr->add_option("--uid", tr_uid, "act as this user (root only): another local account");

  AnnounceArgs ann;
  bool ann_silent = false;
  auto* an = app.add_subcommand("announce", "forged UDP announcements naming our own TCP listener, every 5 ms");
  an->add_option("group", ann.group, "the feed's group, ADDRESS:PORT")->required();
  an->add_option("--interface-ip", ann.interface_ip, "address of the interface to send from (default 127.0.0.1)");
  an->add_option("--listen", ann.listen_ip, "address our TCP listener binds (default 127.0.0.1)");
  an->add_option("--channel", ann.channel, "channel announced (default 1)");
  an->add_option("--interval-ms", ann.interval_ms, "between announcements (default 5)");
  an->add_option("--seconds", ann.seconds, "how long (default 60)");
  auto* an_close = an->add_flag("--close", ann.close, "accept connections and close them at once");
  auto* an_refuse = an->add_flag("--refuse", ann.refuse, "answer each hello with a challenge it cannot prove")
                        ->excludes(an_close);
  an->add_flag("--silent", ann_silent, "accept connections and never answer (the default)")
      ->excludes(an_close)
      ->excludes(an_refuse);

  CLI11_PARSE(app, argc, argv);
  install_signal_handlers();
  try {
    if (as_uid) become_user(*as_uid);
    if (snap->parsed()) {
      flood_args.address = address;
      return snapshot_flood(flood_args);
    }
    if (rtx->parsed()) {
      flood_args.address = address;
      return retransmit_flood(flood_args);
    }
    if (nr->parsed()) return never_read(address, clients, seconds);
    if (idle->parsed()) return idle_sockets(address, count, seconds);
    if (subs->parsed()) return subscribers(address, count, seconds, from);
    if (chain->parsed()) return forge_chain(group, interface, seconds, per_ms);
    if (half->parsed()) return half_frame(address, seconds, length, subscribe_first);
    if (garb->parsed()) return garbage(address, seed, timeout_ms);
    if (cred->parsed()) return bad_credentials(address, seconds, cred_clients);
    if (sq->parsed()) return squat(ring, seconds, uid, control);
    if (scr->parsed()) return scribble_position(ring, value, seconds);
    if (tr->parsed()) return truncate_ring(ring, bytes, tr_uid);
    if (an->parsed()) return announce(ann);
  } catch (const Error& e) {
    fmt::print(stderr, "mdcast_attack: {}\n", e.what());
    return 1;
  }
  return 1;
}

// mdcast: the command line. Subcommands:
//   publish    run a publisher (synthetic order flow) on a medium
//   subscribe  run a subscriber: exact delivery, book verification
//   demo       one publisher + N subscriber processes, live progress, report
//   stat       live counters of running mdcast processes
//   verify     compare result files (books identical?)
//   bench      latency, throughput, fan-out vs the medium's raw baseline (apps/bench)
//   secret new a secrets-file line with a fresh random secret
//   secret public  the public key a secrets-file line seeds (signed announcements)
//   doctor     the host, RDMA devices and interfaces judged against the settings
//   record     a subscriber writing what it is delivered into pcap files
//   replay     a publisher of a recording
//   relay      a subscriber of a feed republishing it, same session and sequences, on another medium
// Settings come from defaults, then --config FILE (TOML), then flags.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <map>
#include <new>
#include <system_error>

#include "bench/command.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "output.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/wire/signature.hpp"
#include "record_commands.hpp"
#include "runners.hpp"
#include "settings.hpp"

using namespace mdcast;
using namespace mdcast::app;

namespace {

// A setting given on the command line, with the flag the user typed: an
// error names that flag (--cpu), not the key's own name (publisher.cpus).
struct Given {
  std::string key, value, where;
};
struct Flags {
  std::vector<Given> set;  // in command-line order
};

// "--subscribers" of "--subscribers,-n": how errors name the flag.
std::string long_name(const std::string& names) {
  const auto at = names.find("--");
  return at == std::string::npos ? names : names.substr(at, names.find(',', at) - at);
}

// Adds --flag bound to settings key `key`; --help shows the key's type,
// default and help (from a default Settings and the key's own text, so they
// cannot drift from the code; a medium's key says which medium), or `help`
// where this command means something more by it. A key whose default is
// "not set" is shown as "default: none" unless the help says what it means.
void flag(CLI::App* app, Flags& f, const std::string& name, const std::string& key, std::string help = {}) {
  const SettingInfo info = setting_info(key);
  if (help.empty()) {
    const std::string section = key.substr(0, key.find('.'));
    help = (section == "udp" || section == "verbs" || section == "shm" ? section + ": " : "") + info.help;
  }
  const bool unset = info.default_text.empty() && help.find("default") == std::string::npos;
  app->add_option_function<std::string>(
         name, [&f, key, where = long_name(name)](const std::string& v) { f.set.push_back({key, v, where}); },
         unset ? help + " (default: none)" : help)
      ->type_name(info.type)
      ->default_str(info.default_text);
}

// A boolean --flag bound to settings key `key`: alone it means true;
// "--flag false" (or =false) sets it off.
void bool_flag(CLI::App* app, Flags& f, const std::string& name, const std::string& key) {
  const SettingInfo info = setting_info(key);
  app->add_option_function<std::string>(
         name, [&f, key, where = long_name(name)](const std::string& v) { f.set.push_back({key, v, where}); },
         fmt::format("{} (alone: true; default: {})", info.help, info.default_text))
      ->type_name("[BOOL]")
      ->expected(0, 1)
      ->default_str("true");
}

void feed_flags(CLI::App* app, Flags& f) {
  add_set_option(  // --set section.key=value, for any setting (see --help-config)
      app, [&f](std::string k, std::string v) { f.set.push_back({k, std::move(v), "--set " + k}); },
      "set any setting: --set publisher.rate=250k (see --help-config)");
  flag(app, f, "--medium", "feed.medium");
  flag(app, f, "--name", "feed.name");
  flag(app, f, "--channel", "feed.channel", "the feed's (first) channel id");
  flag(app, f, "--channels", "feed.channels");
  flag(app, f, "--channel-map", "feed.channel_map");
  flag(app, f, "--max-instruments", "feed.max_instruments");
  flag(app, f, "--max-orders", "feed.max_orders");
  flag(app, f, "--idle", "feed.idle");
  flag(app, f, "--control", "feed.control", "control address override (unix:@name, tcp:host:port; default: derived from --name and the medium)");
  flag(app, f, "--shm-slots", "shm.slots");
  flag(app, f, "--device", "verbs.device", "verbs: RDMA device (default: the one owning --local-ip)");
  flag(app, f, "--gid-index", "verbs.gid_index");
  flag(app, f, "--local-ip", "verbs.local_ip", "verbs: local IPv4 address of the RDMA netdev (default: --device's, or the only RoCE IPv4 GID)");
  flag(app, f, "--group", "verbs.group");
  flag(app, f, "--qkey", "verbs.qkey");
  flag(app, f, "--control-ip", "verbs.control_ip", "verbs: publisher's control address (default for a publisher: --local-ip)");
  flag(app, f, "--control-port", "verbs.control_port");
  flag(app, f, "--shm-dir", "shm.dir");
  flag(app, f, "--udp-group", "udp.group");
  flag(app, f, "--interface", "udp.interface");
  flag(app, f, "--rail-b", "udp.rail_b");
}

// What every publisher of a feed takes (publish, replay; a relay the part
// that leaves its datagrams the upstream's).
void engine_flags(CLI::App* app, Flags& f, bool relay = false) {
  flag(app, f, "--max-datagram", "publisher.max_datagram");
  flag(app, f, "--retransmit-bytes", "publisher.retransmit_bytes");
  flag(app, f, "--linger", "publisher.linger");
  flag(app, f, "--secrets", "publisher.secrets", "secrets file: clients must prove an identity (chmod 600; default: none, an open feed)");
  if (relay) return;
  flag(app, f, "--flush-interval", "publisher.flush_interval");
  bool_flag(app, f, "--crc", "publisher.crc");
}

void publisher_flags(CLI::App* app, Flags& f) {
  flag(app, f, "--rate", "publisher.rate");
  flag(app, f, "--duration", "publisher.duration");
  flag(app, f, "--instrument-count", "publisher.instruments");
  flag(app, f, "--seed", "publisher.seed");
  flag(app, f, "--heartbeat-interval", "publisher.heartbeat_interval");
  flag(app, f, "--pacing", "publisher.pacing");
  flag(app, f, "--pacing-rate", "publisher.pacing_rate");
}

// How a subscriber proves itself and when it gives up (subscribe, record).
void subscription_flags(CLI::App* app, Flags& f) {
  flag(app, f, "--identity", "subscriber.identity", "identity proven to the publisher (default: the secret file's only line)");
  flag(app, f, "--secret-file", "subscriber.secret_file", "file with the identity's secret (chmod 600; default: none, an open feed)");
  flag(app, f, "--wait", "subscriber.wait");
  flag(app, f, "--give-up", "subscriber.give_up");
}

void subscriber_flags(CLI::App* app, Flags& f, bool demo) {
  flag(app, f, "--instruments", "subscriber.instruments",
       demo ? "the instruments every subscriber takes: all | ids such as 0-9,20" : "");
  subscription_flags(app, f);
  bool_flag(app, f, "--verify", "subscriber.verify");
  flag(app, f, "--capacity", "subscriber.capacity");
  flag(app, f, "--inject-loss", "subscriber.inject_loss");
  if (demo) return;
  bool_flag(app, f, "--print", "subscriber.print");
  flag(app, f, "--duration", "subscriber.duration");
  flag(app, f, "--result", "subscriber.result");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mdcast: market data over RDMA multicast, shared memory and UDP"};
  // One subcommand, or none with --help-config (checked after parsing).
  app.require_subcommand(0, 1);
  // --config (and --help-config) anywhere: `mdcast publish --config f.toml`
  // as well as `mdcast --config f.toml publish`.
  app.fallthrough();
  std::string config;
  app.add_option("--config", config, "TOML settings file (flags override it; default: none)")->check(CLI::ExistingFile);
  bool help_config = false;
  app.add_flag("--help-config", help_config, "list every settings key");

  Flags f;
  auto* pub = app.add_subcommand("publish", "run a publisher of synthetic order flow");
  feed_flags(pub, f);
  publisher_flags(pub, f);
  engine_flags(pub, f);
  flag(pub, f, "--result", "publisher.result");
  flag(pub, f, "--wait-subscribers", "publisher.wait_subscribers");
  flag(pub, f, "--threads", "publisher.threads",
       "publishing threads, each its share of the channels (0: one per --cpu entry, else 1)");
  flag(pub, f, "--cpu", "publisher.cpus", "CPUs for the publishing threads, one each (0,1 or 2-5; default: not pinned)");

  auto* sub = app.add_subcommand("subscribe", "run a subscriber with exact delivery and book verification");
  feed_flags(sub, f);
  subscriber_flags(sub, f, false);
  flag(sub, f, "--cpu", "subscriber.cpu");

  auto* demo = app.add_subcommand("demo", "one publisher and N subscriber processes, live progress, final report");
  feed_flags(demo, f);
  publisher_flags(demo, f);
  engine_flags(demo, f);
  subscriber_flags(demo, f, true);
  flag(demo, f, "--subscribers,-n", "demo.subscribers");
  flag(demo, f, "--threads", "publisher.threads", "the publisher's threads, each its share of the channels (0: one)");
  flag(demo, f, "--cpu", "demo.cpus");
  flag(demo, f, "--loss", "demo.loss", "loss injected into subscriber 1 (e.g. 0.01 or 1%)");
  flag(demo, f, "--cut-rail-a", "demo.cut_rail_a");
  bool_flag(demo, f, "--keep", "demo.keep");
  bool_flag(demo, f, "--progress", "demo.progress");

  StatArgs stat_args;
  auto* stat = app.add_subcommand("stat", "live counters of running mdcast processes");
  stat->add_flag("--watch,-w", stat_args.watch, "refresh until interrupted");
  stat->add_option("--interval", stat_args.interval_s, "refresh interval in seconds (with --watch)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  stat->add_flag("--all,-a", stat_args.all, "every counter, not only the main ones");
  auto* stat_json = stat->add_flag("--json", stat_args.json, "one JSON document: processes[] with their counters "
                                                              "(with --watch, one document per line)");
  stat->add_flag("--prometheus", stat_args.prometheus,
                 "the Prometheus text format, for node_exporter's textfile collector (docs/operations.md)")
      ->excludes(stat_json)
      ->excludes("--watch");
  auto* stat_clean = stat->add_flag("--clean", stat_args.clean,
                                    "remove what processes that are gone left: counters files, a dead publisher's "
                                    "shm ring and control socket");
  stat_clean->excludes(stat_json)->excludes("--prometheus")->excludes("--watch");
  stat->add_flag("--catalogue", stat_args.catalogue,
                 "every counter a counters file can hold: section, Prometheus name, type, meaning (Markdown)")
      ->excludes(stat_json)
      ->excludes("--prometheus")
      ->excludes(stat_clean)
      ->excludes("--watch");
  stat->add_flag("--subscribers", stat_args.subscribers,
                 "publishers: a line per subscriber (identity, lag, gaps, requests, recoveries); subscribers: their loss report");
  stat->add_flag("--dry-run", stat_args.dry_run, "with --clean: say what would be removed, remove nothing")
      ->needs(stat_clean);
  stat->add_option("--shm-dir", stat_args.shm_dir,
                   "with --clean: the directory the rings are in (shm.dir; default: /dev/hugepages and /dev/shm)")
      ->needs(stat_clean);
  stat->add_option("pid", stat_args.pids, "only these processes");

  BenchArgs bench_args;
  auto* bench = add_bench_command(app, bench_args);

  std::string secret_identity, secret_instruments = "all";
  auto* secret = app.add_subcommand("secret", "secrets for authenticated feeds");
  secret->require_subcommand(1);
  auto* secret_new = secret->add_subcommand(
      "new", "print a secrets-file line with a fresh random secret: add it to the publisher's publisher.secrets "
             "file and to the subscriber's subscriber.secret_file (both chmod 600)");
  secret_new->add_option("--identity", secret_identity, "the client's name (1-64 of A-Z a-z 0-9 . _ - @ +)")->required();
  secret_new->add_option("--instruments", secret_instruments, "what it may receive: all, or ids such as 0-99,200")
      ->capture_default_str();

  std::string secret_file;
  auto* secret_public = secret->add_subcommand(
      "public", "print the Ed25519 public key that a secrets-file line seeds: udp.announce_key_file signs the "
                "publisher's announcements with it, subscribers set udp.announce_public_key to this");
  secret_public->add_option("file", secret_file, "the secrets file (its only line)")->required();

  std::string verify_pub;
  std::vector<std::string> verify_subs;
  auto* verify = app.add_subcommand("verify", "compare subscriber result files with the publisher's");
  verify->add_option("publisher", verify_pub, "publisher result file")->required()->check(CLI::ExistingFile);
  verify->add_option("subscribers", verify_subs, "subscriber result files")->required()->check(CLI::ExistingFile);
  auto verify_match = runtime::BookMatch::kSameSession;
  verify->add_flag("--content{1}", verify_match, "compare the books alone, whatever session built them (a replay, a relay)");
  verify->add_flag("--state{2}", verify_match, "compare the books' state alone: a conflated feed (relay --conflate) "
                   "reaches it by fewer messages")->excludes("--content");

  DoctorArgs doctor_args;
  auto* doc = app.add_subcommand("doctor", "check the host, RDMA devices and interfaces against the settings "
                                           "(ok / warning / error with advice; exit 3 on an error)");
  feed_flags(doc, f);
  doc->add_flag("--json", doctor_args.json, "one JSON object instead of text");
  flag(doc, f, "--processes", "doctor.processes");
  doc->add_option("--root", doctor_args.root, "read /sys and /proc under this directory (tests; default: /)");

  RecordArgs record_args;
  auto* rec = app.add_subcommand("record", "subscribe to every instrument and write each delivered datagram into "
                                           "nanosecond pcap files (docs/recording.md)");
  feed_flags(rec, f);
  rec->add_option("--out,-o", record_args.out, "base name: files BASE.0000.pcap, BASE.0001.pcap, ... with .idx")
      ->required();
  rec->add_option("--rotate-size", record_args.rotate_size, "next file once one holds this much (e.g. 1G; 0: never)")
      ->type_name("SIZE")
      ->capture_default_str();
  rec->add_option("--rotate-time", record_args.rotate_time, "next file once one is this old (e.g. 1h; 0: never)")
      ->type_name("DURATION")
      ->capture_default_str();
  rec->add_option("--index-every", record_args.index_every, "an index entry every this many datagrams")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  rec->add_option("--min-free", record_args.min_free,
                  "refuse to start with less free disk (default: 256MiB, or --rotate-size if larger)")
      ->type_name("SIZE");
  subscription_flags(rec, f);
  flag(rec, f, "--duration", "subscriber.duration");
  flag(rec, f, "--result", "subscriber.result", "write a result file (the recorder's books) at the end");

  ReplayArgs replay_args;
  auto* rep = app.add_subcommand("replay", "publish a recording again over any medium (docs/recording.md)");
  feed_flags(rep, f);
  rep->add_option("files", replay_args.files, "recording files, or a BASE for BASE.0000.pcap, BASE.0001.pcap, ...")
      ->required();
  rep->add_option("--speed", replay_args.speed, "a multiple of the recorded pace (1, 10, 0.5) or max")
      ->capture_default_str();
  rep->add_option("--from", replay_args.from, "start at a sequence (12345), a UTC time (2026-12-01T17:00:00Z) or an "
                                              "offset (30s); the books before it are published first (default: the start)");
  engine_flags(rep, f);
  flag(rep, f, "--result", "publisher.result");
  flag(rep, f, "--wait-subscribers", "publisher.wait_subscribers", "hold the replay until this many have subscribed");

  // The relay's own flags are its downstream side (a publisher's); --from-*
  // describe the feed it subscribes to, as a subscriber's would.
  Flags up;
  std::string up_config;
  auto* rel = app.add_subcommand("relay", "subscribe to a feed and publish it again on another medium, with the "
                                          "origin's session and sequence numbers (docs/operations.md)");
  feed_flags(rel, f);
  engine_flags(rel, f, true);
  flag(rel, f, "--result", "publisher.result", "write a result file (the relay's books) at the end");
  flag(rel, f, "--cpu", "publisher.cpus", "CPU for the relay's thread (default: not pinned)");
  flag(rel, f, "--wait-subscribers", "publisher.wait_subscribers",
       "subscribe upstream once this many have subscribed downstream (what came before is recovered from the origin)");
  flag(rel, f, "--conflate", "relay.conflate");
  rel->add_option("--from-config", up_config, "TOML settings of the upstream feed (default: none)")->check(CLI::ExistingFile);
  add_set_option(
      rel, [&up](std::string k, std::string v) { up.set.push_back({k, std::move(v), "--from-set " + k}); },
      "set any setting of the upstream side: --from-set udp.group=239.1.1.1:7000", "--from-set");
  flag(rel, up, "--from-medium", "feed.medium", "the upstream's medium: shm | udp | verbs");
  flag(rel, up, "--from-name", "feed.name", "the upstream feed's name");
  flag(rel, up, "--from-udp-group", "udp.group", "udp: the upstream's rail A GROUP:PORT");
  flag(rel, up, "--from-interface", "udp.interface", "udp: interface the upstream is received on");
  flag(rel, up, "--from-control", "feed.control", "the upstream's control address (default: derived as a subscriber's)");
  flag(rel, up, "--from-identity", "subscriber.identity", "identity proven to the upstream");
  flag(rel, up, "--from-secret-file", "subscriber.secret_file", "file with that identity's secret");
  flag(rel, up, "--wait", "subscriber.wait", "how long to wait for the upstream's session");
  flag(rel, up, "--give-up", "subscriber.give_up", "stop after the upstream is silent this long");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    if (!explain_unexpected(app, e)) app.exit(e);
    return exit_code::kUsage;
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (105-120) say which parse rule failed; a script
    // needs only "the command line is wrong".
    return app.exit(e) == 0 ? exit_code::kOk : exit_code::kUsage;
  }

  if (!help_config && app.get_subcommands().empty()) {
    fmt::print(stderr, "mdcast: a subcommand is required (publish, subscribe, demo, stat, verify, secret, bench, "
                       "doctor, record, replay, relay); "
                       "mdcast --help lists them, mdcast --help-config every setting\n");
    return exit_code::kUsage;
  }
  try {
    if (help_config) {
      for (const auto& k : known_settings())
        fmt::print("  {:<32} {:<16} {} (default: {})\n", k.key, k.type, k.help, k.default_text.empty() ? "\"\"" : k.default_text);
      return 0;
    }
    Settings s;
    if (!config.empty()) load_config(s, config);
    for (const Given& g : f.set) apply_setting(s, g.key, g.value, g.where);
    install_signal_handlers();
    s.feed.stop = &g_stop;  // a subscriber waiting for its publisher gives up on SIGINT/SIGTERM
    if (pub->parsed()) return run_publish(s);
    if (sub->parsed()) return run_subscribe(s);
    if (demo->parsed()) {
      DemoArgs a;
      a.config = config;
      for (const Given& g : f.set) a.settings.emplace_back(g.key, g.value);
      return run_demo(s, a);
    }
    if (stat->parsed()) return run_stat(stat_args);
    if (verify->parsed()) return run_verify(verify_pub, verify_subs, verify_match);
    if (secret_new->parsed()) {
      if (!wire::valid_identity(secret_identity))
        fail_usage("secret new --identity: an identity is 1-{} characters of A-Z a-z 0-9 . _ - @ +", wire::auth::kMaxIdentity);
      try {
        (void)feed::parse_entitlement(secret_instruments);
      } catch (const Error& e) {
        throw UsageError(e.with_context("secret new --instruments"));
      }
      std::string line = feed::format_secret_line(secret_identity, feed::SecretKey::random(), secret_instruments);
      fmt::print("{}", line);
      wire::wipe(line);
      return 0;
    }
    if (secret_public->parsed()) {
      const feed::ClientSecret line = with_context("secret public", [&] { return feed::ClientSecret::load(secret_file); });
      fmt::print("{}\n", wire::format_public_key(wire::SigningKey(line.key().view()).public_key()));
      return 0;
    }
    if (bench->parsed()) return run_bench(s, bench_args);
    if (doc->parsed()) return run_doctor(s, doctor_args);
    if (rec->parsed()) return run_record(s, record_args);
    if (rep->parsed()) return run_replay(s, replay_args);
    if (rel->parsed()) {
      Settings u;
      if (!up_config.empty()) load_config(u, up_config);
      for (const Given& g : up.set) apply_setting(u, g.key, g.value, g.where);
      u.feed.stop = &g_stop;
      return run_relay(s, u);
    }
  } catch (const UsageError& e) {
    report_noexcept(e.what());
    return exit_code::kUsage;
  } catch (const Error& e) {
    report_noexcept(e.what());
    return g_stop.requested() ? exit_code::kInterrupted : exit_code::kSetup;
  } catch (const std::system_error& e) {
    // A print to stdout or stderr whose reader went away (`| head`): quietly.
    if (closed_pipe(e)) return exit_code::kOutputClosed;
    report_noexcept(fmt::format("unexpected error: {}", e.what()));
    return exit_code::kSetup;
  } catch (const std::bad_alloc&) {
    // Setup sizes what it allocates against MemAvailable first; this is what slipped past.
    report_noexcept("out of memory (std::bad_alloc) while setting up: lower the feed.max_* settings or free memory");
    return exit_code::kSetup;
  } catch (const std::exception& e) {
    report_noexcept(fmt::format("unexpected error: {}", e.what()));
    return exit_code::kSetup;
  }
  return exit_code::kOk;
}

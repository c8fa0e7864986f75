// What a command line CLI11 could not place is told: the flag meant, not
// only the words it did not expect (issue 28: "The following arguments were
// not expected: 100k --rat" sent a new user to --help for a typo).
#include "cli.hpp"

#include <fmt/format.h>

#include <string_view>

#include "mdcast/settings/suggest.hpp"

namespace mdcast::app {
namespace {

// Flags that were renamed so that one name has one meaning in every
// subcommand: said as such, since the nearest spelling may be another flag.
struct Renamed {
  std::string_view command, old_name, now;
};
constexpr Renamed kRenamed[] = {
    {"publish", "--instruments",
     "--instrument-count N (synthetic instruments); --instruments lists instruments to receive (subscribe, demo)"},
    {"demo", "--filter", "--instruments IDS (the subscribers' instruments, as in subscribe)"},
};

// The deepest subcommand parsed ("new" under "secret"), or the app itself.
const CLI::App* parsed_command(const CLI::App& app) {
  const CLI::App* at = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : at->get_subcommands()) {
      at = sub;
      deeper = true;
      break;
    }
  }
  return at;
}

// "mdcast publish", "mdcast secret new".
std::string command_path(const CLI::App& app, const CLI::App* cmd) {
  std::string path;
  for (const CLI::App* c = cmd; c && c != &app; c = c->get_parent()) path = " " + c->get_name() + path;
  return "mdcast" + path;
}

// The flags `cmd` takes, its own first, then those of the commands above it
// (--config, --help-config reach every subcommand).
std::vector<std::string> flags_of(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (const CLI::App* c = cmd; c; c = c->get_parent())
    for (const CLI::Option* o : c->get_options()) {
      if (o->get_positional()) continue;
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    }
  return names;
}

}  // namespace

bool explain_unexpected(const CLI::App& app, const CLI::ExtrasError&) {
  const CLI::App* cmd = parsed_command(app);
  const std::string who = command_path(app, cmd);
  std::vector<std::string> flags, words;
  for (const std::string& a : app.remaining(true)) (a.size() > 1 && a[0] == '-' ? flags : words).push_back(a);
  // A word where a subcommand was expected (`mdcast pubish --rate 1k`): the
  // flags after it were never the subcommand's to judge.
  if (cmd == &app && !words.empty()) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    const std::string near = settings::nearest(words.front(), names);
    fmt::print(stderr, "mdcast: unknown subcommand '{}'{}\nmdcast --help lists them\n", words.front(),
               near.empty() ? std::string() : fmt::format(": did you mean {}?", near));
    return true;
  }
  if (flags.empty()) return false;
  const std::vector<std::string> known = flags_of(cmd);
  for (const std::string& f : flags) {
    const std::string name = f.substr(0, f.find('='));
    std::string said;
    for (const Renamed& r : kRenamed)
      if (r.command == cmd->get_name() && r.old_name == name) said = fmt::format("{} is now {}", name, r.now);
    if (said.empty()) {
      const std::string near = settings::nearest(name, known);
      said = near.empty() ? fmt::format("unknown flag {}", name) : fmt::format("unknown flag {}: did you mean {}?", name, near);
    }
    fmt::print(stderr, "{}: {}\n", who, said);
  }
  fmt::print(stderr, "{} --help lists every flag\n", who);
  return true;
}

}  // namespace mdcast::app

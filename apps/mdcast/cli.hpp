// Command-line options that more than one subcommand has, and what a
// command line that does not parse is told.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace mdcast::app {

// --set KEY=VALUE (or another `name`), repeatable: each pair to `take`, in
// command-line order, for apply_setting() once the command line is parsed.
inline CLI::Option* add_set_option(CLI::App* app, std::function<void(std::string key, std::string value)> take,
                                   const std::string& help, const std::string& name = "--set") {
  return app
      ->add_option_function<std::vector<std::string>>(
          name,
          [take = std::move(take), name](const std::vector<std::string>& vs) {
            for (const auto& kv : vs) {
              const auto eq = kv.find('=');
              if (eq == std::string::npos) throw CLI::ValidationError(name, "expected KEY=VALUE, got '" + kv + "'");
              take(kv.substr(0, eq), kv.substr(eq + 1));
            }
          },
          help)
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// After CLI11 found arguments it did not expect (e): one line per unknown
// flag naming the flag meant (a flag renamed, or the nearest of the
// subcommand's), or the nearest subcommand for an unknown word where one was
// expected. Returns false when there was nothing to say beyond CLI11's own
// message (a stray value), which the caller then prints.
bool explain_unexpected(const CLI::App& app, const CLI::ExtrasError& e);

}  // namespace mdcast::app

// Command-line options that more than one subcommand has.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

namespace mdcast::app {

// --set KEY=VALUE, repeatable: the pairs in command-line order, for
// apply_setting() once the command line is parsed.
inline CLI::Option* add_set_option(CLI::App* app, std::vector<std::pair<std::string, std::string>>& out,
                                   const std::string& help) {
  return app
      ->add_option_function<std::vector<std::string>>(
          "--set",
          [&out](const std::vector<std::string>& vs) {
            for (const auto& kv : vs) {
              const auto eq = kv.find('=');
              if (eq == std::string::npos) throw CLI::ValidationError("--set", "expected KEY=VALUE, got '" + kv + "'");
              out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
            }
          },
          help)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace mdcast::app

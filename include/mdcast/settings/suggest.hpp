// "Did you mean": the nearest known name to one a user mistyped (a flag, a
// settings key, a subcommand), so an error points at the fix instead of at
// --help. Control code: allocates; never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mdcast::settings {

// Edits (insert, delete, substitute, swap two neighbours) from a to b.
[[nodiscard]] size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `typed`, or "" when none is near enough to be
// what was meant: a third of the typed length in edits (at least one, at
// most three), or a candidate that the typed name begins or ends (--rat for
// --rate, nmae for name). Ties go to the first candidate, so the caller's
// order decides (a subcommand's own flags before its parent's).
[[nodiscard]] std::string nearest(std::string_view typed, const std::vector<std::string>& candidates);

// The settings key nearest to `key` ("feed.nmae" -> "feed.name"), or "".
// A key of a known section is matched on the name within that section only
// (publisher.rat -> publisher.rate); a mistyped section against every key.
[[nodiscard]] std::string nearest_setting(std::string_view key);

}  // namespace mdcast::settings

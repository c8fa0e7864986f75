// Errors for setup and control code. The data path never throws: it returns
// enums (see each header's contract) and counts failures.
//
// An Error carries a message that grows context on the way up, in the spirit
// of Aeron's AERON_APPEND_ERR: the innermost site says what failed and why
// (errno text included), each caller adds where ("shm ring /dev/shm/x", "config
// key publisher.rate"), so the final message alone tells an operator what to fix.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace mdcast {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string what) : std::runtime_error(std::move(what)) {}

  // Returns a copy with `context` prepended: "context: inner message".
  [[nodiscard]] Error with_context(std::string_view context) const {
    return Error(fmt::format("{}: {}", context, what()));
  }
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// Like fail(), with the text of the current errno appended.
template <class... Args>
[[noreturn]] void fail_errno(fmt::format_string<Args...> f, Args&&... args) {
  const int e = errno;
  throw Error(fmt::format("{}: {} (errno {})", fmt::format(f, std::forward<Args>(args)...),
                          std::strerror(e), e));
}

// Runs fn(); if it throws an Error, rethrows it with `context` prepended.
template <class Fn>
decltype(auto) with_context(std::string_view context, Fn&& fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const Error& e) {
    throw e.with_context(context);
  }
}

}  // namespace mdcast

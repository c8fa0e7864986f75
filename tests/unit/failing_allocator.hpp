// Global allocation that a test can make fail: include it in the one source
// file of a test executable (it replaces operator new and delete for the
// whole program). While t_fail_allocations is set on a thread, every
// allocation there throws std::bad_alloc (nothrow forms return null) and is
// counted in t_failed_allocations.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

namespace mdcast::test {
inline thread_local bool t_fail_allocations = false;
inline thread_local uint64_t t_failed_allocations = 0;

inline void* allocate_or_fail(std::size_t n) {
  if (t_fail_allocations) {
    ++t_failed_allocations;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace mdcast::test

// Every non-aligned form, so that new and delete always pair malloc with free
// (sanitizers check the pairing). Once these are inlined at -O1 (the sanitizer
// presets), GCC sees a new-expression's memory reach free() and warns of a
// mismatch that is this file's design.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) { return mdcast::test::allocate_or_fail(n); }
void* operator new[](std::size_t n) { return mdcast::test::allocate_or_fail(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return mdcast::test::allocate_or_fail(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

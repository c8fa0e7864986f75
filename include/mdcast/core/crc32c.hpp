// CRC-32C (Castagnoli) over a byte range. Uses the SSE4.2 crc32 instruction
// when the CPU has it (checked once), a table otherwise. Datagrams carry it on
// media that can corrupt bytes (UDP, the in-memory fault injector); shm and
// verbs (ICRC) leave it off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mdcast {

[[nodiscard]] uint32_t crc32c(uint32_t crc, const std::byte* data, size_t len) noexcept;

[[nodiscard]] inline uint32_t crc32c(std::span<const std::byte> bytes) noexcept {
  return crc32c(0, bytes.data(), bytes.size());
}

}  // namespace mdcast

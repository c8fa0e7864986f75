// The checks of `mdcast doctor`, one function per area (private).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mdcast/doctor/doctor.hpp"

namespace mdcast::doctor::detail {

void check_host(const Options& o, Report& r);   // memory lock, huge pages, governor, isolated cores
void check_shm(const Options& o, Report& r);    // ring directory, its free space, huge pages for the ring
void check_udp(const Options& o, Report& r);    // interface(s), MTU, multicast, rp_filter, rmem_max
void check_rdma(const Options& o, Report& r);
void check_fanout(const Options& o, Report& r); // N processes reading one publisher here: memory, descriptors, limits   // devices, ports, GIDs, the port mdcast would use, QKey

// "64 MiB", "1.5 GiB"
[[nodiscard]] std::string bytes_text(uint64_t n);
// true where root is the host's own (system calls describe the same host).
[[nodiscard]] bool host_root(const Options& o) noexcept;

}  // namespace mdcast::doctor::detail

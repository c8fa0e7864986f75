// Test helpers: addresses to use, skip when there is no device, child
// processes of mdcast-verbs-probe with their output in a log file.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::test::verbs {

#define MDCAST_REQUIRE_RDMA()                                                                            \
  do {                                                                                                    \
    if (!::mdcast::media::verbs::rdma_device_present())                                                   \
      GTEST_SKIP() << "no RDMA device here (/sys/class/infiniband is empty); scripts/test-verbs.sh runs " \
                      "this test in a Soft-RoCE VM";                                                     \
  } while (0)

// Runs step() until pred() or timeout_ms; returns pred(). Tests assert
// outcomes, never how long they took: the deadline only ends a hung test.
inline bool poll_until(const std::function<bool()>& pred, const std::function<void()>& step, int timeout_ms) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout_ms) * kNsPerMs;
  while (!pred()) {
    if (monotonic_ns() > deadline) return false;
    step();
  }
  return true;
}

// A syntactically valid datagram (header only, 64 bytes) with sequence `seq`;
// a heartbeat's flags (UNSEQUENCED) with `heartbeat`.
inline std::vector<std::byte> header_datagram(uint64_t seq, bool heartbeat = false) {
  std::vector<std::byte> d(64);
  wire::DatagramHeader h;
  h.flags = heartbeat ? wire::kFlagUnsequenced : 0;
  h.channel = 1;
  h.session = 1;
  h.sender = 1;
  h.sequence = seq;
  h.length = 64;
  wire::write_header(d.data(), h);
  return d;
}

// The local address of the (first) device: SOFTROCE_IP in the VM, else the
// first RoCE IPv4 GID on this host.
inline std::string local_ip() {
  if (const char* e = std::getenv("MDCAST_VERBS_IP")) return e;
  if (const char* e = std::getenv("SOFTROCE_IP")) return e;
  for (const auto& a : media::verbs::local_addresses())
    if (a.gid_index == 1) return a.ip;
  const auto all = media::verbs::local_addresses();
  return all.empty() ? std::string() : all.front().ip;
}

// The second device's address (veth mode), or empty.
inline std::string second_ip() {
  if (const char* e = std::getenv("MDCAST_VERBS_IP2")) return e;
  if (const char* e = std::getenv("SOFTROCE_IP2")) return e;
  return {};
}

inline std::string log_dir(const std::string& name) {
  const std::string d = "verbs-logs/" + name;
  std::filesystem::create_directories(d);
  return d;
}

struct Proc {
  std::string name;
  pid_t pid = -1;
  std::string log;
  int status = -1;
};

inline Proc spawn(const std::string& dir, const std::string& name, const std::vector<std::string>& args) {
  Proc p;
  p.name = name;
  p.log = dir + "/" + name + ".log";
  std::vector<std::string> argv{MDCAST_VERBS_PROBE};
  argv.insert(argv.end(), args.begin(), args.end());
  {
    std::ofstream f(p.log);
    for (const auto& a : argv) f << a << ' ';
    f << '\n';
  }
  p.pid = fork();
  if (p.pid == 0) {
    FILE* f = std::freopen(p.log.c_str(), "a", stdout);
    if (f) (void)dup2(fileno(stdout), STDERR_FILENO);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  return p;
}

// Waits for every process, killing what is still running at the deadline.
inline void wait_all(std::vector<Proc*> procs, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    bool running = false;
    for (Proc* p : procs) {
      if (p->pid <= 0 || p->status != -1) continue;
      int st = 0;
      const pid_t r = waitpid(p->pid, &st, WNOHANG);
      if (r == p->pid) p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      else running = true;
    }
    if (!running) return;
    if (std::chrono::steady_clock::now() > deadline) {
      for (Proc* p : procs)
        if (p->status == -1) {
          kill(p->pid, SIGKILL);
          int st = 0;
          waitpid(p->pid, &st, 0);
          p->status = 137;
          ADD_FAILURE() << p->name << " did not finish within " << timeout_s << " s (killed); log " << p->log;
        }
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

inline std::string tail(const std::string& path, size_t lines = 15) {
  std::ifstream f(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(f, l);) all.push_back(l);
  std::ostringstream o;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) o << "    " << all[i] << '\n';
  return o.str();
}

}  // namespace mdcast::test::verbs

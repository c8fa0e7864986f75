// A test's own directory for counters files (MDCAST_STAT_DIR), removed after
// it: the files a test writes never meet those of processes on the host.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace mdcast::stats {

class StatDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mdcast-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) + "-" +
            std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ::setenv("MDCAST_STAT_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("MDCAST_STAT_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

}  // namespace mdcast::stats

// The public blocking API: exthost::Host, driven from several threads.
#include "exthost/host.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>
#include <vector>

#include "../support/proc.hpp"

namespace {

namespace fs = std::filesystem;

class HostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-host-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    dir = root / "fake-plugin";
    fs::create_directories(dir / ".synaps-plugin");
  }
  void TearDown() override { fs::remove_all(root); }
  void manifest(const std::string& mode) {
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
        << R"(","args":[")" << mode << R"("],"permissions":["tools.register"]}})";
  }
  fs::path root, dir;
};

TEST_F(HostTest, CallsFromEightThreadsAreAllAnsweredAndNeverOverlapOnTheWire) {
  manifest("echo");
  exthost::Host host;
  auto info = host.load(dir);
  ASSERT_TRUE(info.ok()) << info.error().message;
  constexpr int k_threads = 8, k_calls = 50;
  std::atomic<int> answered{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_calls; ++i) {
        const std::string input = R"({"thread":)" + std::to_string(t) + R"(,"call":)" + std::to_string(i) + "}";
        auto r = host.call_tool(info->id, "echo", input);
        if (r.ok() && *r == R"({"content":)" + input + "}") {
          ++answered;
        } else {
          ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(answered.load(), k_threads * k_calls);
  EXPECT_EQ(wrong.load(), 0);
  auto overlaps = host.call_tool(info->id, "overlaps", "{}");
  ASSERT_TRUE(overlaps.ok());
  EXPECT_EQ(*overlaps, "0") << "a request was sent while another was unanswered";
}

TEST_F(HostTest, ReportsLoadFailuresWithTheirKind) {
  exthost::Host host;
  auto missing = host.load(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, exthost::ErrorKind::manifest);
  std::ofstream(dir / ".synaps-plugin/plugin.json") << R"({"name":"no-extension"})";
  auto none = host.load(dir);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, exthost::ErrorKind::manifest);
  EXPECT_NE(none.error().message.find("declares no extension"), std::string::npos);
  manifest("bad-protocol");
  auto bad = host.load(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, exthost::ErrorKind::extension);
  EXPECT_FALSE(host.health("fake-plugin")) << "a failed load registers nothing";
  EXPECT_EQ(exthost::testing::zombie_children(), 0);
  EXPECT_FALSE(host.unload("fake-plugin").ok());
}

TEST_F(HostTest, ObservesAndStopsALoadedExtension) {
  manifest("echo");
  exthost::Host host;
  auto info = host.load(dir);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "fake-plugin");
  EXPECT_EQ(info->health, exthost::Health::running);
  ASSERT_EQ(info->tools.size(), 1u);
  EXPECT_EQ(info->tools[0].input_schema_json, R"({"type":"object"})");
  EXPECT_EQ(host.lifecycle(info->id), (exthost::Lifecycle{2, exthost::Health::running}));
  auto again = host.load(dir);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "Extension 'fake-plugin' is already loaded");
  const auto pid = host.child_pid(info->id);
  ASSERT_TRUE(pid);
  ASSERT_TRUE(host.unload(info->id).ok());
  EXPECT_FALSE(exthost::testing::alive(*pid));
  EXPECT_FALSE(host.lifecycle(info->id));
}

}  // namespace

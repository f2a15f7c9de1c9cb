// shutdown_all() and kill_all() reach extensions that are still loading: the load fails
// without waiting for initialize's deadline, nothing is registered, a discovery under way
// loads no further plugin, and the children are gone.
#include <gtest/gtest.h>

#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "../support/proc.hpp"
#include "exthost/host.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long the fixture may take to start; how long a stop of a load may take (initialize's
// own deadline is 10 s; the ladder about 1.5 s).
constexpr auto k_ready_bound = 10s;
constexpr auto k_stop_bound = 3s;

bool wait_for_file(const fs::path& p) {
  const auto deadline = Clock::now() + k_ready_bound;
  while (!fs::exists(p)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// The pid of the extension and of the process in its group, as the stall fixture wrote them.
std::pair<pid_t, pid_t> stalled_pids(const fs::path& p) {
  std::ifstream f(p);
  const auto v = boost::json::parse(std::string(std::istreambuf_iterator<char>(f), {})).as_object();
  return {static_cast<pid_t>(v.at("pid").as_int64()), static_cast<pid_t>(v.at("child").as_int64())};
}

bool gone_soon(pid_t pid) {
  const auto deadline = Clock::now() + 2s;
  while (exthost::testing::alive(pid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

class StopWhileLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-stop-loading-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root);
  }
  void TearDown() override {
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.path().extension() == ".json") {
        const auto [pid, child] = stalled_pids(entry.path());
        ::kill(pid, SIGKILL);
        ::kill(child, SIGKILL);
      }
    }
    fs::remove_all(root);
  }
  // A plugin whose extension never answers initialize and records its pids in <name>.json.
  fs::path plugin(const fs::path& parent, const std::string& name) {
    const fs::path dir = parent / name;
    fs::create_directories(dir / ".synaps-plugin");
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
        << R"(","args":["stall",")" << (root / (name + ".json")).string()
        << R"(","hang-init"],"permissions":["tools.register","providers.register"]}})";
    return dir;
  }
  fs::path root;
};

TEST_F(StopWhileLoading, ShutdownAllEndsALoadWaitingForInitialize) {
  const fs::path dir = plugin(root / "plugins", "slow");
  exthost::HostOptions options;
  options.home = root / "home";
  exthost::Host host(options);
  std::optional<exthost::Result<exthost::ExtensionInfo>> loaded;
  std::thread loader([&] { loaded = host.load(dir); });
  ASSERT_TRUE(wait_for_file(root / "slow.json"));
  const auto [pid, child] = stalled_pids(root / "slow.json");
  const auto started = Clock::now();
  host.shutdown_all();
  loader.join();
  EXPECT_LT(Clock::now() - started, k_stop_bound);
  ASSERT_TRUE(loaded && !loaded->ok());
  EXPECT_EQ(loaded->error().message, "Extension 'slow' was stopped while loading: the host is shutting down");
  EXPECT_FALSE(host.health("slow")) << "nothing registered";
  EXPECT_TRUE(host.tools().empty());
  EXPECT_TRUE(gone_soon(pid));
  EXPECT_TRUE(gone_soon(child));
}

TEST_F(StopWhileLoading, KillAllEndsALoadAtOnce) {
  const fs::path dir = plugin(root / "plugins", "slow");
  exthost::HostOptions options;
  options.home = root / "home";
  exthost::Host host(options);
  std::optional<exthost::Result<exthost::ExtensionInfo>> loaded;
  std::thread loader([&] { loaded = host.load(dir); });
  ASSERT_TRUE(wait_for_file(root / "slow.json"));
  const auto [pid, child] = stalled_pids(root / "slow.json");
  const auto started = Clock::now();
  host.kill_all();
  loader.join();
  EXPECT_LT(Clock::now() - started, 500ms) << "no ladder: SIGKILL at once";
  ASSERT_TRUE(loaded && !loaded->ok());
  EXPECT_FALSE(host.health("slow"));
  EXPECT_TRUE(gone_soon(pid));
  EXPECT_TRUE(gone_soon(child));
}

TEST_F(StopWhileLoading, ShutdownAllEndsADiscoveryBeforeItsNextPlugin) {
  const fs::path home = root / "home";
  plugin(home / "plugins", "a-first");
  plugin(home / "plugins", "b-second");
  exthost::HostOptions options;
  options.home = home;
  exthost::Host host(options);
  exthost::DiscoveryReport report;
  std::thread discoverer([&] { report = host.discover(); });
  ASSERT_TRUE(wait_for_file(root / "a-first.json"));
  const auto started = Clock::now();
  host.shutdown_all();
  discoverer.join();
  EXPECT_LT(Clock::now() - started, k_stop_bound);
  EXPECT_TRUE(report.loaded.empty());
  EXPECT_TRUE(report.failed.empty()) << "a plugin stopped while loading did not fail";
  EXPECT_FALSE(fs::exists(root / "b-second.json")) << "the second plugin was not spawned";
  EXPECT_TRUE(host.list().empty());
}

}  // namespace

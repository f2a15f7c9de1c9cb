// The public blocking API: exthost::Host, driven from several threads.
#include "exthost/host.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <sys/stat.h>
#include <mutex>
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
  void manifest(const std::string& mode, const std::string& arg = "", const std::string& permissions = R"("tools.register")") {
    std::ofstream(dir / ".synaps-plugin/plugin.json")
        << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
        << R"(","args":[")" << mode << (arg.empty() ? "" : R"(",")" + arg) << R"("],"permissions":[)" << permissions << "]}}";
  }
  fs::path root, dir;
};

// The extension declares no concurrency: its requests are written to its pipe in call order
// and it answers them one after another; each caller gets its own answer.
TEST_F(HostTest, CallsFromEightThreadsAreEachAnsweredWithTheirOwnResult) {
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
}

// Four loads of one plugin at once used to all succeed: four processes under one id, one
// listed, and each hook run four times per tool call.
TEST_F(HostTest, ConcurrentLoadsOfOnePluginStartOneExtension) {
  manifest("echo");
  exthost::Host host;
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<exthost::Result<exthost::ExtensionInfo>> results;
  constexpr std::size_t k_loads = 4;
  for (std::size_t i = 0; i < k_loads; ++i) {
    host.load(dir, [&](exthost::Result<exthost::ExtensionInfo> r) {
      std::lock_guard lock(mutex);
      results.push_back(std::move(r));
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return results.size() == k_loads; }));
  }
  std::size_t ok = 0;
  for (const auto& r : results) {
    if (r.ok()) {
      ++ok;
    } else {
      EXPECT_EQ(r.error().message, "Extension 'fake-plugin' is already loaded");
    }
  }
  EXPECT_EQ(ok, 1u);
  ASSERT_EQ(host.list().size(), 1u);
  const auto pid = host.child_pid("fake-plugin");
  ASSERT_TRUE(pid);
  EXPECT_EQ(exthost::testing::live_children(), std::vector<int>{*pid}) << "one process under the id";
}

// Two discoveries at once used to both run: the second one's loads all failed as "already
// loaded". The second now waits for the first and returns its report.
TEST_F(HostTest, ConcurrentDiscoveriesRunOnceAndShareTheReport) {
  manifest("echo");
  const fs::path home = root / "home";
  fs::create_directories(home / "plugins");
  fs::copy(dir, home / "plugins" / "fake-plugin", fs::copy_options::recursive);
  exthost::HostOptions options;
  options.home = home;
  exthost::Host host(options);
  exthost::DiscoveryReport first, second;
  std::thread a([&] { first = host.discover(); });
  std::thread b([&] { second = host.discover(); });
  a.join();
  b.join();
  EXPECT_EQ(first.loaded, std::vector<std::string>{"fake-plugin"});
  EXPECT_EQ(second.loaded, std::vector<std::string>{"fake-plugin"});
  EXPECT_TRUE(first.failed.empty());
  EXPECT_TRUE(second.failed.empty()) << second.failed.front().reason;
  EXPECT_EQ(exthost::testing::live_children().size(), 1u);
}

// A host config file that is a FIFO used to freeze the host's I/O thread at discovery; now
// it is refused off that thread, and since nobody can tell which plugins were meant to stay
// off, none is loaded.
TEST_F(HostTest, AHostConfigFileThatIsAFifoLoadsNothingAndNeverFreezesTheHost) {
  manifest("echo");
  const fs::path home = root / "home";
  fs::create_directories(home / "plugins");
  fs::copy(dir, home / "plugins" / "fake-plugin", fs::copy_options::recursive);
  ASSERT_EQ(::mkfifo((home / "config").c_str(), 0600), 0);
  exthost::HostOptions options;
  options.home = home;
  exthost::Host host(options);
  auto report = std::async(std::launch::async, [&] { return host.discover(); });
  if (report.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::ofstream unblock(home / "config");  // let the old behaviour end instead of hanging
    FAIL() << "discovery froze on a FIFO host config file";
  }
  auto r = report.get();
  EXPECT_TRUE(r.loaded.empty());
  ASSERT_EQ(r.failed.size(), 1u);
  EXPECT_NE(r.failed.front().reason.find("Failed to read disabled_plugins"), std::string::npos) << r.failed.front().reason;
  EXPECT_NE(r.failed.front().reason.find("FIFO"), std::string::npos) << r.failed.front().reason;
}

// A child that ends during the handshake used to fail the load with a bare
// "transport closed: EOF", naming neither the extension nor the method.
TEST_F(HostTest, AHandshakeFailureNamesTheExtensionAndTheMethod) {
  manifest("exit-in-init");
  exthost::Host host;
  auto r = host.load(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("Extension 'fake-plugin' initialize failed: transport closed", 0), 0u)
      << r.error().message;
}

// A Host destroyed while a load waits for its configuration on the worker pool: the load's
// frame is destroyed with the I/O context, after the manager, and must touch nothing of it
// (AddressSanitizer reported a use after free).
TEST_F(HostTest, DestroyingTheHostWhileALoadWaitsOnTheWorkersTouchesNothingFreed) {
  std::ofstream(dir / ".synaps-plugin/plugin.json")
      << R"({"extension":{"protocol_version":1,"runtime":"process","command":")" << EXTHOST_FAKE_EXTENSION
      << R"(","args":["echo"],"permissions":["tools.register"],"config":[{"key":"endpoint"}]}})";
  std::atomic<bool> resolving{false};
  {
    exthost::HostOptions options;
    options.env = [&](const std::string& name) -> std::optional<std::string> {
      if (name.rfind("EXTHOST_EXTENSION_", 0) == 0) {
        resolving = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
      return std::nullopt;
    };
    exthost::Host host(options);
    host.load(dir, [](exthost::Result<exthost::ExtensionInfo>) {});
    for (int i = 0; i < 500 && !resolving; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(resolving.load());
  }  // destroyed with the load suspended
  EXPECT_TRUE(exthost::testing::live_children().empty());
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
  EXPECT_TRUE(exthost::testing::no_zombies_within());
  EXPECT_FALSE(host.unload("fake-plugin").ok());
}

TEST_F(HostTest, ObservesAndStopsALoadedExtension) {
  manifest("echo");
  exthost::Host host;
  auto info = host.load(dir);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "fake-plugin");
  EXPECT_EQ(info->health, exthost::Health::running);
  ASSERT_EQ(info->tools.size(), 8u);  // echo, then the fixture's generic tools
  EXPECT_EQ(info->tools[0].name, "echo");
  EXPECT_EQ(info->tools[0].runtime_name, "fake-plugin:echo");
  EXPECT_EQ(info->tools[0].api_name, "fake-plugin_echo");
  EXPECT_EQ(info->tools[0].input_schema_json, R"({"type":"object"})");
  EXPECT_EQ(host.lifecycle(info->id), (exthost::Lifecycle{2, exthost::Health::running}));
  EXPECT_FALSE(info->plugin_info_json) << "an extension without info.get loads all the same";
  auto again = host.load(dir);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "Extension 'fake-plugin' is already loaded");
  const auto pid = host.child_pid(info->id);
  ASSERT_TRUE(pid);
  ASSERT_TRUE(host.unload(info->id).ok());
  EXPECT_FALSE(exthost::testing::alive(*pid));
  EXPECT_FALSE(host.lifecycle(info->id));
}

TEST_F(HostTest, RegistrationsNeedTheirPermissionsAndARefusedChildIsStopped) {
  manifest("echo", "", R"("memory.read")");
  exthost::Host host;
  auto r = host.load(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "Extension 'fake-plugin' registered tools but lacks permission 'tools.register'");
  EXPECT_FALSE(host.health("fake-plugin"));
  EXPECT_TRUE(exthost::testing::no_zombies_within());
  manifest("provider", "1", R"("tools.register")");
  auto p = host.load(dir);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "Extension 'fake-plugin' registered providers but lacks permission 'providers.register'");
}

TEST_F(HostTest, ProvidersStreamAndRunToolsThroughThePublicApi) {
  manifest("provider", "5", R"("tools.register","providers.register")");
  exthost::Host host;
  auto info = host.load(dir);
  ASSERT_TRUE(info.ok()) << info.error().message;
  ASSERT_EQ(info->providers.size(), 1u);
  EXPECT_EQ(info->providers[0].id, "fake-plugin:mock");
  ASSERT_EQ(info->providers[0].models.size(), 1u);
  EXPECT_EQ(info->providers[0].models[0].id, "fake-plugin:mock:m1");
  EXPECT_TRUE(info->providers[0].models[0].tool_use);
  EXPECT_TRUE(info->providers[0].models[0].streaming);
  EXPECT_EQ(info->providers[0].models[0].context_window, std::optional<std::uint64_t>(8192));
  std::vector<std::string> events;
  auto streamed = host.stream(info->id, R"({"messages":[]})", [&](const std::string& e) { events.push_back(e); });
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  EXPECT_EQ(*streamed, R"({"content":[{"type":"text","text":"streamed"}],"stop_reason":"end_turn","usage":{"output_tokens":5}})");
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[0], R"({"type":"text","text":"0,"})");
  EXPECT_EQ(events[5], R"({"type":"usage","usage":{"input_tokens":4,"output_tokens":2}})");
  EXPECT_EQ(events[6], R"({"type":"done"})");
  exthost::ProviderTools tools;
  tools.deny = [](const std::string& name, const std::string&) -> std::optional<std::string> {
    if (name == "echo") return std::nullopt;
    return "no";
  };
  tools.run = [](const std::string&, const std::string& input) -> exthost::Result<std::string> { return "ran " + input; };
  std::uint32_t requested = 0;
  auto looped = host.complete_with_tools(info->id, R"({"messages":[]})", tools, 4, &requested);
  ASSERT_TRUE(looped.ok()) << looped.error().message;
  EXPECT_EQ(*looped, R"({"content":[{"type":"text","text":"final: \"ran {\\\"text\\\":\\\"hi\\\"}\""}],"stop_reason":"end_turn","usage":null})");
  EXPECT_EQ(requested, 1u);
  auto denied = host.complete_with_tools(info->id, R"({"messages":[]})");
  ASSERT_TRUE(denied.ok());
  EXPECT_NE(denied->find("not available to extension providers"), std::string::npos) << *denied;
  auto bad = host.complete(info->id, "{not json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, exthost::ErrorKind::usage);
}

TEST_F(HostTest, CommandsInfoAndUiEventsThroughThePublicApi) {
  manifest("commands");
  exthost::Host host;
  auto info = host.load(dir);
  ASSERT_TRUE(info.ok()) << info.error().message;
  ASSERT_TRUE(info->plugin_info_json) << "info.get is probed at load when tools are registered";
  EXPECT_NE(info->plugin_info_json->find(R"("backend":"cpu")"), std::string::npos);
  auto out = host.invoke_command(info->id, "small", {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->result_json, R"({"status":"ok"})");
  ASSERT_EQ(out->events_json.size(), 9u);
  EXPECT_EQ(out->events_json[0], R"({"kind":"text","content":"hello"})");
  EXPECT_FALSE(out->limit_notice);
  EXPECT_TRUE(out->counters.saw_done);
  auto flood = host.invoke_command(info->id, "flood", {"100", "65536"});
  ASSERT_TRUE(flood.ok());
  ASSERT_TRUE(flood->limit_notice);
  EXPECT_EQ(flood->counters.retained_bytes, 262144u);
  EXPECT_EQ(flood->counters.dropped_events, 96u);
  auto args = host.sidecar_spawn_args(info->id);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(*args, R"({"args":["--model-path","/x"],"language":"en"})");
  auto commit = host.settings_editor_commit(info->id, "voice", "model", R"("model:tiny.en")");
  ASSERT_TRUE(commit.ok());
  EXPECT_EQ(*commit, R"({"method":"settings.editor.commit","params":{"category":"voice","field":"model","value":"model:tiny.en"}})");
  std::vector<std::string> ui;
  std::mutex ui_mutex;
  ASSERT_TRUE(host.watch_ui_events(info->id, [&](const std::string& e) {
    std::lock_guard lock(ui_mutex);
    ui.push_back(e);
  }).ok());
  ASSERT_TRUE(host.call_tool(info->id, "widgets", "{}").ok());
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard lock(ui_mutex);
      if (ui.size() >= 3) break;
    }
    ::usleep(5000);
  }
  std::lock_guard lock(ui_mutex);
  ASSERT_EQ(ui.size(), 3u) << "the malformed upsert is skipped";
  EXPECT_EQ(ui[0], R"({"method":"widget.upsert","id":"clock","lines":["12:00"],"position":"top_left","title":null,"ttl_secs":null})");
  EXPECT_EQ(ui[1], R"({"method":"settings.editor.render","rows":[{"label":"tiny.en","selectable":true}],"cursor":0})");
  EXPECT_EQ(ui[2], R"({"method":"widget.dismiss","id":"clock"})");
}

}  // namespace

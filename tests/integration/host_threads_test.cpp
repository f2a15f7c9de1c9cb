// The Host's thread rules with real children: nothing thrown crosses a thread, nothing
// an embedder gives the Host runs on (or can deadlock) its I/O thread, and a UI watcher
// outlives its extension's restarts. Every blocking step is bounded: a deadlock fails the
// test (and leaks the Host, whose I/O thread may be stuck) instead of hanging it.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "../support/plugin_dir.hpp"
#include "../support/within.hpp"
#include "exthost/host.hpp"

namespace {

using namespace std::chrono_literals;
using exthost::testing::eventually;
using exthost::testing::finishes_within;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

constexpr const char* k_provider_permissions = R"({"permissions":["tools.register","providers.register"]})";

class HostThreadsTest : public ::testing::Test {
 protected:
  HostThreadsTest() : root("threads") {}
  void TearDown() override {
    if (leak_host) (void)host.release();  // its I/O thread may be stuck: never join it
  }
  exthost::HostOptions options() { return exthost::testing::isolated_options(root.path() / "home"); }
  exthost::Host& make_host(exthost::HostOptions o) {
    host = std::make_unique<exthost::Host>(std::move(o));
    return *host;
  }
  std::filesystem::path plugin(const std::string& name, const std::vector<std::string>& args,
                               const std::string& extra = R"({"permissions":["tools.register"]})") {
    return write_fake_plugin(root.path(), name, args, extra);
  }
  // Runs `f` (which may block on the Host) within `bound`; an exception from it fails the test.
  template <class F>
  bool within(std::chrono::milliseconds bound, F f) {
    const bool finished = finishes_within(bound, [f = std::move(f)]() mutable {
      try {
        f();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "a Host method threw: " << e.what();
      }
    });
    if (!finished) leak_host = true;
    return finished;
  }
  template <class T>
  bool ready_within(std::future<T>& f, std::chrono::milliseconds bound) {
    if (f.wait_for(bound) == std::future_status::ready) return true;
    leak_host = true;
    return false;
  }

  TempRoot root;
  std::unique_ptr<exthost::Host> host;
  bool leak_host = false;
};

// --- exceptions ------------------------------------------------------------------------

TEST_F(HostThreadsTest, AnExceptionInsideAnOperationBecomesAnInternalErrorWithItsText) {
  auto o = options();
  o.env = [](const std::string& name) -> std::optional<std::string> {
    throw std::runtime_error("vault unreachable for " + name);
  };
  auto& h = make_host(o);
  const auto dir = plugin("configured", {"echo"}, R"({"permissions":["tools.register"],"config":[{"key":"endpoint"}]})");
  exthost::Result<exthost::ExtensionInfo> loaded = exthost::Error::usage("not run");
  ASSERT_TRUE(within(10s, [&] { loaded = h.load(dir); }));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().kind, exthost::ErrorKind::internal);
  // Thrown on the worker that resolves the configuration: the error names the extension.
  EXPECT_EQ(loaded.error().message,
            "Extension 'configured' configuration could not be resolved: vault unreachable for "
            "EXTHOST_EXTENSION_CONFIGURED_ENDPOINT");

  std::promise<exthost::Result<exthost::ExtensionInfo>> done;
  h.load(dir, [&](exthost::Result<exthost::ExtensionInfo> r) { done.set_value(std::move(r)); });
  auto completed = done.get_future();
  ASSERT_TRUE(ready_within(completed, 10s));
  auto r = completed.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, exthost::ErrorKind::internal);
  EXPECT_NE(r.error().message.find("vault unreachable for "), std::string::npos) << r.error().message;

  // A method without a Result logs the failure and returns an empty value.
  exthost::DiscoveryReport report;
  report.loaded = {"untouched"};
  ASSERT_TRUE(within(10s, [&] { report = h.discover(); }));
  EXPECT_TRUE(report.loaded.empty());
  EXPECT_TRUE(report.failed.empty());
}

TEST_F(HostThreadsTest, AThrowingCompletionIsLoggedAndTheHostKeepsServing) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("echoer", {"echo"})).ok());
  std::promise<void> thrown;
  h.call_named_tool("echoer:echo", R"({"n":1})", {}, [&](exthost::Result<std::string>) {
    thrown.set_value();
    throw std::runtime_error("embedder bug");
  });
  auto threw = thrown.get_future();
  ASSERT_TRUE(ready_within(threw, 10s));
  std::promise<exthost::Result<std::string>> next;
  h.call_named_tool("echoer:echo", R"({"n":2})", {}, [&](exthost::Result<std::string> r) { next.set_value(std::move(r)); });
  auto answered = next.get_future();
  ASSERT_TRUE(ready_within(answered, 10s)) << "the host stopped serving after a completion threw";
  EXPECT_EQ(answered.get().value(), R"({"content":{"n":2}})");
  exthost::Result<std::string> blocking = exthost::Error::usage("not run");
  ASSERT_TRUE(within(10s, [&] { blocking = h.call_tool("echoer", "echo", R"({"n":3})"); }));
  EXPECT_EQ(blocking.value(), R"({"content":{"n":3}})");
}

TEST_F(HostThreadsTest, AThrowingEventCallbackIsLoggedAndEveryEventStillOffered) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("cmds", {"commands"})).ok());
  ASSERT_TRUE(h.load(plugin("prov", {"provider", "3"}, k_provider_permissions)).ok());
  int offered = 0;
  exthost::Result<exthost::CommandOutput> out = exthost::Error::usage("not run");
  ASSERT_TRUE(within(20s, [&] {
    out = h.invoke_command("cmds", "small", {}, [&](const std::string&) {
      ++offered;
      throw std::runtime_error("display broke");
    });
  }));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->events_json.size(), 9u);
  EXPECT_EQ(offered, 9);
  int streamed = 0;
  exthost::Result<std::string> turn = exthost::Error::usage("not run");
  ASSERT_TRUE(within(20s, [&] {
    turn = h.stream("prov", R"({"messages":[]})", [&](const std::string&) {
      ++streamed;
      throw std::logic_error("renderer broke");
    });
  }));
  ASSERT_TRUE(turn.ok()) << turn.error().message;
  EXPECT_EQ(streamed, 5);  // three deltas, usage, done
}

// --- blocking calls on the I/O thread --------------------------------------------------

TEST_F(HostThreadsTest, ABlockingCallOnTheIoThreadFailsAtOnceAndAReadRunsInline) {
  // The environment lookup is the embedder's code that still runs on the I/O thread.
  std::atomic<exthost::Host*> self{nullptr};
  exthost::Result<std::string> nested = exthost::Error::usage("not called");
  std::optional<std::size_t> listed;
  auto o = options();
  o.env = [&](const std::string& name) -> std::optional<std::string> {
    exthost::Host* h = self.load();
    if (h && name == "EXTHOST_DISABLE_PROJECT_PLUGINS") {
      nested = h->call_tool("echoer", "echo", "{}");
      listed = h->list().size();
    }
    return std::nullopt;
  };
  auto& h = make_host(o);
  ASSERT_TRUE(h.load(plugin("echoer", {"echo"})).ok());
  self = &h;
  ASSERT_TRUE(within(10s, [&] { (void)h.discover(); })) << "a blocking call from the I/O thread waited for itself";
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().kind, exthost::ErrorKind::internal);
  EXPECT_EQ(nested.error().message,
            "Host::call_tool was called on the host's I/O thread (from a callback); it would wait for itself — use "
            "the Completion overload or return from the callback first");
  EXPECT_EQ(listed, std::optional<std::size_t>(1));
}

// --- where callbacks run -----------------------------------------------------------------

TEST_F(HostThreadsTest, EventCallbacksRunOnTheCallersThreadAndMayCallTheHost) {
  write_fake_plugin(root.path() / "home" / "plugins", "found", {"echo"});
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("prov", {"provider", "5"}, k_provider_permissions)).ok());
  ASSERT_TRUE(h.load(plugin("cmds", {"commands"})).ok());
  bool on_caller = true;
  std::vector<std::string> progress, streamed, invoked;
  exthost::Result<std::string> from_stream = exthost::Error::usage("not called");
  exthost::Result<std::string> from_invoke = exthost::Error::usage("not called");
  exthost::Result<std::string> turn = exthost::Error::usage("not run");
  exthost::Result<exthost::CommandOutput> out = exthost::Error::usage("not run");
  exthost::DiscoveryReport report;
  ASSERT_TRUE(within(30s, [&] {
    const auto caller = std::this_thread::get_id();
    report = h.discover([&](const exthost::DiscoveryEvent& e) {
      on_caller &= std::this_thread::get_id() == caller;
      progress.push_back(e.plugin + ":" + std::to_string(h.list().size()));
    });
    turn = h.stream("prov", R"({"messages":[]})", [&](const std::string& e) {
      on_caller &= std::this_thread::get_id() == caller;
      if (streamed.empty()) from_stream = h.call_tool("cmds", "echo", R"({"from":"stream"})");
      streamed.push_back(e);
    });
    out = h.invoke_command("cmds", "small", {}, [&](const std::string& e) {
      on_caller &= std::this_thread::get_id() == caller;
      if (invoked.empty()) from_invoke = h.call_tool("prov", "echo", R"({"from":"invoke"})");
      invoked.push_back(e);
    });
  })) << "a callback that calls the Host waited for itself";
  EXPECT_TRUE(on_caller);
  EXPECT_EQ(report.loaded, std::vector<std::string>{"found"});
  EXPECT_EQ(progress, (std::vector<std::string>{":2", "found:3", ":3"}));
  ASSERT_TRUE(turn.ok()) << turn.error().message;
  EXPECT_EQ(streamed.size(), 7u);
  EXPECT_EQ(from_stream.value(), R"({"content":{"from":"stream"}})");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(invoked, out->events_json) << "every event, in order, before the call returned";
  EXPECT_EQ(from_invoke.value(), R"({"content":{"from":"invoke"}})");
}

TEST_F(HostThreadsTest, ASlowEventCallbackHoldsBackOnlyItsOwnCall) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("cmds", {"commands"})).ok());
  ASSERT_TRUE(h.load(plugin("echoer", {"echo"})).ok());
  std::promise<void> sleeping_promise;
  auto sleeping = sleeping_promise.get_future();
  std::vector<std::string> seen;
  exthost::Result<exthost::CommandOutput> out = exthost::Error::usage("not run");
  auto slow_done = std::async(std::launch::async, [&] {
    // 257 retained events of 1 KiB: far more than the caller's backlog holds.
    out = h.invoke_command("cmds", "flood", {"400", "1024"}, [&](const std::string& e) {
      if (seen.empty()) {
        sleeping_promise.set_value();
        std::this_thread::sleep_for(1000ms);
      } else {
        std::this_thread::sleep_for(1ms);
      }
      seen.push_back(e);
    });
  });
  ASSERT_TRUE(ready_within(sleeping, 20s));
  const auto asked = std::chrono::steady_clock::now();
  exthost::Result<std::string> echoed = exthost::Error::usage("not run");
  ASSERT_TRUE(within(10s, [&] { echoed = h.call_tool("echoer", "echo", R"({"n":1})"); }));
  const auto waited = std::chrono::steady_clock::now() - asked;
  EXPECT_EQ(echoed.value(), R"({"content":{"n":1}})");
  EXPECT_LT(waited, 500ms) << "another extension waited for a slow callback";
  if (slow_done.wait_for(30s) != std::future_status::ready) {
    leak_host = true;
    new auto(std::move(slow_done));  // never join a stuck call
    FAIL() << "the slow call did not finish";
  }
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_GT(out->events_json.size(), 200u);
  EXPECT_EQ(seen, out->events_json) << "every event, in order, before the call returned";
}

TEST_F(HostThreadsTest, CompletionsRunOffTheIoThreadAndMayCallTheHost) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("echoer", {"echo"})).ok());
  std::promise<exthost::Result<std::string>> nested;
  h.call_named_tool("echoer:echo", R"({"n":1})", {}, [&](exthost::Result<std::string>) {
    nested.set_value(h.call_tool("echoer", "echo", R"({"n":2})"));
  });
  auto answered = nested.get_future();
  ASSERT_TRUE(ready_within(answered, 10s)) << "a completion that calls the Host waited for itself";
  EXPECT_EQ(answered.get().value(), R"({"content":{"n":2}})");
  // One callback thread: completions run one at a time, in the order their calls ended.
  constexpr int k_calls = 20;
  std::mutex m;
  std::vector<int> order;
  std::promise<void> all;
  for (int i = 0; i < k_calls; ++i) {
    h.call_named_tool("echoer:echo", "{}", {}, [&, i](exthost::Result<std::string>) {
      std::lock_guard lock(m);
      order.push_back(i);
      if (order.size() == k_calls) all.set_value();
    });
  }
  auto finished = all.get_future();
  ASSERT_TRUE(ready_within(finished, 20s));
  std::lock_guard lock(m);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(k_calls));
}

TEST_F(HostThreadsTest, AProviderToolMayCallTheHostAndAThrowingOneFailsOnlyItself) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("prov", {"provider", "0"}, k_provider_permissions)).ok());
  exthost::ProviderTools tools;
  tools.deny = [](const std::string&, const std::string&) -> std::optional<std::string> { return std::nullopt; };
  tools.run = [&](const std::string& name, const std::string& input) -> exthost::Result<std::string> {
    return h.call_tool("prov", name, input);  // the obvious way to run a tool
  };
  exthost::Result<std::string> looped = exthost::Error::usage("not run");
  std::uint32_t requested = 0;
  ASSERT_TRUE(within(20s, [&] { looped = h.complete_with_tools("prov", R"({"messages":[]})", tools, 4, &requested); }))
      << "a provider tool that calls the Host waited for itself";
  ASSERT_TRUE(looped.ok()) << looped.error().message;
  EXPECT_NE(looped->find(R"(final: \"{\\\"content\\\":{\\\"text\\\":\\\"hi\\\"}}\")"), std::string::npos) << *looped;
  EXPECT_EQ(requested, 1u);
  tools.run = [](const std::string&, const std::string&) -> exthost::Result<std::string> {
    throw std::runtime_error("tool crashed");
  };
  ASSERT_TRUE(within(20s, [&] { looped = h.complete_with_tools("prov", R"({"messages":[]})", tools); }));
  ASSERT_TRUE(looped.ok()) << looped.error().message;
  EXPECT_NE(looped->find("Tool execution failed: ProviderTools::run: tool crashed"), std::string::npos) << *looped;
  tools.deny = [](const std::string&, const std::string&) -> std::optional<std::string> {
    throw std::runtime_error("policy unavailable");
  };
  ASSERT_TRUE(within(20s, [&] { looped = h.complete_with_tools("prov", R"({"messages":[]})", tools); }));
  ASSERT_TRUE(looped.ok()) << looped.error().message;
  EXPECT_NE(looped->find("ProviderTools::deny: policy unavailable"), std::string::npos) << *looped;
}

TEST_F(HostThreadsTest, UiWatcherCallbacksRunOffTheIoThreadAndMayCallTheHost) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("cmds", {"commands"})).ok());
  std::mutex m;
  std::vector<std::string> ui;
  int nested_ok = 0;
  ASSERT_TRUE(h.watch_ui_events("cmds", [&](const std::string& e) {
                 const bool ok = h.call_tool("cmds", "echo", R"({"seen":true})").ok();
                 std::lock_guard lock(m);
                 ui.push_back(e);
                 nested_ok += ok ? 1 : 0;
               }).ok());
  exthost::Result<std::string> sent = exthost::Error::usage("not run");
  ASSERT_TRUE(within(10s, [&] { sent = h.call_tool("cmds", "widgets", "{}"); }));
  ASSERT_TRUE(sent.ok());
  const bool all = eventually([&] {
    std::lock_guard lock(m);
    return ui.size() == 3;
  });
  if (!all) leak_host = true;
  ASSERT_TRUE(all) << "a watcher callback that calls the Host waited for itself";
  std::lock_guard lock(m);
  EXPECT_EQ(nested_ok, 3);
  EXPECT_EQ(ui[2], R"({"method":"widget.dismiss","id":"clock"})");
}

// --- UI watchers and restarts --------------------------------------------------------------

TEST_F(HostThreadsTest, AUiWatcherSurvivesACrashAndSeesTheRestartedChild) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("cmds", {"commands"})).ok());
  std::mutex m;
  std::vector<std::string> ui;
  ASSERT_TRUE(h.watch_ui_events("cmds", [&](const std::string& e) {
                 std::lock_guard lock(m);
                 ui.push_back(e);
               }).ok());
  auto count = [&] {
    std::lock_guard lock(m);
    return ui.size();
  };
  ASSERT_TRUE(h.call_tool("cmds", "widgets", "{}").ok());
  ASSERT_TRUE(eventually([&] { return count() == 3; }));
  const auto pid = h.child_pid("cmds");
  ASSERT_TRUE(pid);
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  // The transport's end invalidates the generation (odd) and ends every subscription.
  ASSERT_TRUE(eventually([&] {
    auto life = h.lifecycle("cmds");
    return life && life->generation % 2 == 1;
  }));
  exthost::Result<std::string> sent = exthost::Error::usage("not run");
  ASSERT_TRUE(within(20s, [&] { sent = h.call_tool("cmds", "widgets", "{}"); }));
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  EXPECT_NE(h.child_pid("cmds"), pid) << "the call restarted the child";
  EXPECT_TRUE(eventually([&] { return count() == 6; }, 5s)) << "the restarted child's widgets reached the watcher";
  // Killed from the host and called again at once: the next child starts without delay.
  h.kill_all();
  ASSERT_TRUE(within(20s, [&] { sent = h.call_tool("cmds", "widgets", "{}"); }));
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  EXPECT_TRUE(eventually([&] { return count() == 9; }, 5s)) << "the next child's widgets reached the watcher";
  // Unloaded: the watcher ends, and a fresh load of the same plugin is not watched.
  ASSERT_TRUE(h.unload("cmds").ok());
  ASSERT_TRUE(h.load(root.path() / "cmds").ok());
  ASSERT_TRUE(h.call_tool("cmds", "widgets", "{}").ok());
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(count(), 9u);
}

TEST_F(HostThreadsTest, AUiWatcherThatIsBehindStillRenewsWhenTheTransportEnds) {
  auto& h = make_host(options());
  ASSERT_TRUE(h.load(plugin("cmds", {"commands"})).ok());
  std::promise<void> release_promise;
  std::shared_future<void> release = release_promise.get_future().share();
  std::mutex m;
  std::vector<std::string> ui;
  ASSERT_TRUE(h.watch_ui_events("cmds", [&, release](const std::string& e) {
                 release.wait_for(20s);  // the first callback holds every later one back
                 std::lock_guard lock(m);
                 ui.push_back(e);
               }).ok());
  // Three valid events per call: one in the blocked callback, 64 waiting for it, the last
  // one held by the watcher, which waits for room.
  constexpr int k_calls = 22;
  for (int i = 0; i < k_calls; ++i) {
    exthost::Result<std::string> sent = exthost::Error::usage("not run");
    ASSERT_TRUE(within(10s, [&] { sent = h.call_tool("cmds", "widgets", "{}"); }));
    ASSERT_TRUE(sent.ok()) << sent.error().message;
  }
  std::this_thread::sleep_for(50ms);
  const auto pid = h.child_pid("cmds");
  ASSERT_TRUE(pid);
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  ASSERT_TRUE(eventually([&] {
    auto life = h.lifecycle("cmds");
    return life && life->generation % 2 == 1;
  }));
  exthost::Result<std::string> sent = exthost::Error::usage("not run");
  ASSERT_TRUE(within(20s, [&] { sent = h.call_tool("cmds", "widgets", "{}"); }));
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  release_promise.set_value();
  const std::size_t expected = 3 * (k_calls + 1);
  EXPECT_TRUE(eventually([&] {
    std::lock_guard lock(m);
    return ui.size() == expected;
  }, 10s)) << "the restarted child's widgets reached a watcher that was behind";
  std::this_thread::sleep_for(50ms);
  std::lock_guard lock(m);
  EXPECT_EQ(ui.size(), expected);
}

}  // namespace

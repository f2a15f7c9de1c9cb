// The awaitable API (<exthost/asio.hpp>): a coroutine on the test's own io_context drives a
// Host and resumes on its own thread after each operation.
#include "exthost/asio.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <thread>

#include "../support/plugin_dir.hpp"

namespace {

namespace asio = boost::asio;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

struct Seen {
  std::vector<std::string> results;
  bool resumed_on_caller_thread = true;
};

asio::awaitable<Seen> agent(exthost::Host& host, std::filesystem::path plugin, std::thread::id caller) {
  Seen seen;
  auto check_thread = [&] { seen.resumed_on_caller_thread &= std::this_thread::get_id() == caller; };
  auto info = co_await exthost::async_load(host, plugin, asio::use_awaitable);
  check_thread();
  seen.results.push_back(info ? info->id : info.error().message);
  auto echoed = co_await exthost::async_call_tool(host, "awaited:echo", R"({"text":"hi"})", {}, asio::use_awaitable);
  check_thread();
  seen.results.push_back(echoed ? *echoed : echoed.error().message);
  auto hook = co_await exthost::async_emit_hook(host, R"({"kind":"before_message","message":"m"})", asio::use_awaitable);
  seen.results.push_back(hook ? *hook : hook.error().message);
  auto invoked = co_await exthost::async_invoke_command(host, "awaited", "small", {}, asio::use_awaitable);
  seen.results.push_back(invoked ? std::to_string(invoked->events_json.size()) + " events" : invoked.error().message);
  auto missing = co_await exthost::async_complete(host, "nobody", "{}", asio::use_awaitable);
  seen.results.push_back(missing ? "?" : missing.error().message);
  auto unloaded = co_await exthost::async_unload(host, "awaited", asio::use_awaitable);
  check_thread();
  seen.results.push_back(unloaded ? "unloaded" : unloaded.error().message);
  co_return seen;
}

TEST(AsyncHost, ACoroutineAwaitsEveryOperationOnItsOwnExecutor) {
  TempRoot root("async");
  const auto dir = write_fake_plugin(root.path(), "awaited", {"commands"});
  // The io_context outlives the Host: the Host's callback thread posts completions into it, so
  // it must be gone (joined) before the context it posts to is destroyed.
  asio::io_context io;
  exthost::Host host(exthost::testing::isolated_options(root.path() / "home"));
  auto future = asio::co_spawn(io, agent(host, dir, std::this_thread::get_id()), asio::use_future);
  io.run_for(std::chrono::seconds(20));
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "did not finish within 20 s";
  const Seen seen = future.get();
  EXPECT_TRUE(seen.resumed_on_caller_thread);
  EXPECT_EQ(seen.results, (std::vector<std::string>{"awaited", R"({"content":{"text":"hi"}})", R"({"action":"continue"})",
                                                    "9 events", "Extension 'nobody' not found", "unloaded"}));
}

}  // namespace

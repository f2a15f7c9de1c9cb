// Host::call_tool and call_named_tool prepare a call on the caller's thread: the input is
// parsed there and a call without a folder takes the host's current one there. What the
// hooks see, and how a malformed input fails, are the same through every entry point.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <future>
#include <sstream>
#include <thread>

#include "../support/plugin_dir.hpp"
#include "exthost/host.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using exthost::testing::read_text;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

class HostToolCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_fake_plugin(plugins(), "spy", {"hook", R"({"action":"continue"})", log().string()},
                      R"({"permissions":["tools.intercept"],
                          "hooks":[{"hook":"before_tool_call"},{"hook":"after_tool_call"}]})");
    write_fake_plugin(plugins(), "tools", {"echo"});
  }
  exthost::HostOptions options() { return exthost::testing::isolated_options(root.path() / "home"); }
  fs::path plugins() const { return root.path() / "home" / "plugins"; }
  fs::path log() const { return root.path() / "hooks.jsonl"; }
  std::vector<json::object> hook_events() {
    std::vector<json::object> out;
    std::istringstream lines(read_text(log()));
    for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line).as_object());
    return out;
  }
  TempRoot root{"tool-call"};
};

TEST_F(HostToolCallTest, ACallWithoutAFolderTakesTheHostsCurrentOneThroughEveryEntryPoint) {
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  ASSERT_EQ(*host.call_tool("tools", "echo", R"({"n":1})"), R"({"content":{"n":1}})");
  ASSERT_EQ(*host.call_named_tool("tools:echo", R"({"n":2})"), R"({"content":{"n":2}})");
  std::promise<exthost::Result<std::string>> done;
  host.call_named_tool("tools:echo", R"({"n":3})", {}, [&](exthost::Result<std::string> r) { done.set_value(r); });
  auto completed = done.get_future();
  ASSERT_EQ(completed.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(*completed.get(), R"({"content":{"n":3}})");
  ASSERT_EQ(*host.call_named_tool("tools:echo", R"({"n":4})", {std::nullopt, fs::path("/given/folder")}),
            R"({"content":{"n":4}})");

  const auto events = hook_events();
  ASSERT_EQ(events.size(), 8u);  // before and after, for each call
  const std::string here = fs::current_path().string();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(events[i].at("cwd"), json::value(here)) << "event " << i;
  EXPECT_EQ(events[6].at("cwd"), "/given/folder");
  EXPECT_EQ(events[7].at("cwd"), "/given/folder");
  EXPECT_EQ(events[4].at("tool_input").at("n"), 3);
}

TEST_F(HostToolCallTest, AMalformedInputFailsBeforeAnyExtensionSeesIt) {
  exthost::Host host(options());
  ASSERT_EQ(host.discover().loaded.size(), 2u);
  const std::string expected_start = "tool 'tools:echo' method 'tool.call': invalid input JSON: ";
  auto blocking = host.call_tool("tools", "echo", "{not json");
  ASSERT_FALSE(blocking);
  EXPECT_EQ(blocking.error().kind, exthost::ErrorKind::usage);
  EXPECT_EQ(blocking.error().message.rfind(expected_start, 0), 0u) << blocking.error().message;

  // The Completion API answers the same error later, on the callback thread, never inline.
  std::promise<std::pair<exthost::Result<std::string>, std::thread::id>> done;
  host.call_named_tool("tools:echo", "[1,", {}, [&](exthost::Result<std::string> r) {
    done.set_value({r, std::this_thread::get_id()});
  });
  auto completed = done.get_future();
  ASSERT_EQ(completed.wait_for(30s), std::future_status::ready);
  const auto [result, thread] = completed.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().kind, exthost::ErrorKind::usage);
  EXPECT_EQ(result.error().message.rfind(expected_start, 0), 0u) << result.error().message;
  EXPECT_NE(thread, std::this_thread::get_id());

  EXPECT_TRUE(hook_events().empty()) << "a hook saw a call whose input was malformed";
}

}  // namespace

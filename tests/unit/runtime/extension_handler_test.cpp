// Ported from the reference's runtime trait tests (lifecycle_tests, health_tests).
#include "runtime/extension_handler.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "../../support/bounded.hpp"

namespace exthost::runtime {
namespace {

using exthost::testing::run_bounded;

class UnsupportedHandler : public ExtensionHandler {
 public:
  const std::string& id() const override { return m_id; }
  boost::asio::awaitable<Result<protocol::HookResult>> handle(const protocol::HookEvent&) override {
    ADD_FAILURE() << "a snapshot must not dispatch a hook";
    co_return protocol::hook_result::Continue{};
  }
  boost::asio::awaitable<void> shutdown() override { co_return; }

 private:
  std::string m_id = "unsupported-lifecycle";
};

// Records who each tool call said it was for.
class Callers : public UnsupportedHandler {
 public:
  boost::asio::awaitable<Result<boost::json::value>> call_tool_for(std::string, boost::json::value,
                                                                  std::optional<std::string> session_id,
                                                                  std::optional<std::filesystem::path> cwd) override {
    calls.emplace_back(std::move(session_id), std::move(cwd));
    co_return boost::json::value(nullptr);
  }
  std::vector<std::pair<std::optional<std::string>, std::optional<std::filesystem::path>>> calls;
};

TEST(Health, AsStrCoversAllVariants) {
  EXPECT_EQ(to_string(Health::loaded), "loaded");
  EXPECT_EQ(to_string(Health::failed_validation), "failed_validation");
  EXPECT_EQ(to_string(Health::failed_initialize), "failed_initialize");
  EXPECT_EQ(to_string(Health::running), "running");
  EXPECT_EQ(to_string(Health::restarting), "restarting");
  EXPECT_EQ(to_string(Health::degraded), "degraded");
  EXPECT_EQ(to_string(Health::failed), "failed");
}

TEST(ExtensionHandler, DefaultLifecycleSnapshotIsUnavailable) {
  UnsupportedHandler h;
  const ExtensionHandler& base = h;
  EXPECT_EQ(base.lifecycle_snapshot(), std::nullopt);
}

TEST(ExtensionHandler, DefaultCallToolForServesNoTool) {
  boost::asio::io_context io;
  UnsupportedHandler h;
  const auto chat = std::filesystem::temp_directory_path() / "chat-folder";
  for (auto [session, cwd] : {std::pair{std::optional<std::string>("chat-A"), std::optional(chat)},
                              std::pair{std::optional<std::string>(), std::optional<std::filesystem::path>()}}) {
    auto r = run_bounded(io, h.call_tool_for("any", boost::json::object(), session, cwd));
    ASSERT_TRUE(r);
    ASSERT_FALSE(r->ok());
    EXPECT_NE(r->error().message.find("does not support tool.call"), std::string::npos);
  }
}

TEST(ExtensionHandler, DefaultsNameTheUnsupportedOperation) {
  boost::asio::io_context io;
  UnsupportedHandler h;
  auto message = [&](auto op) {
    auto r = run_bounded(io, std::move(op));
    return r && !r->ok() ? r->error().message : std::string("(no error)");
  };
  ProviderEventSink sink(io.get_executor());
  InvokeEventChannel channel(io.get_executor());
  EXPECT_EQ(message(h.provider_complete(nullptr)), "extension runtime does not support provider.complete");
  EXPECT_EQ(message(h.provider_stream(nullptr, sink)), "provider.stream is not supported by this extension");
  EXPECT_EQ(message(h.invoke_command("c", {}, "r", channel)), "extension runtime does not support command.invoke");
  EXPECT_EQ(message(h.get_info()), "extension runtime does not support info.get");
  EXPECT_EQ(message(h.sidecar_spawn_args()), "extension runtime does not support sidecar.spawn_args");
  EXPECT_EQ(message(h.settings_editor_open("c", "f")), "extension runtime does not support settings.editor.open");
  EXPECT_EQ(message(h.settings_editor_key("c", "f", "Enter")), "extension runtime does not support settings.editor.key");
  EXPECT_EQ(message(h.settings_editor_commit("c", "f", nullptr)),
            "extension runtime does not support settings.editor.commit");
  EXPECT_EQ(h.health(), Health::running);
  EXPECT_EQ(h.restart_count(), 0u);
}

TEST(ExtensionHandler, DefaultSubscriptionHasAlreadyEnded) {
  boost::asio::io_context io;
  UnsupportedHandler h;
  auto sub = h.subscribe_notifications(io.get_executor());
  auto frame = run_bounded(io, sub.queue().pop());
  ASSERT_TRUE(frame);
  EXPECT_FALSE(frame->has_value());
}

TEST(ExtensionHandler, CallToolAsFallsBackToCallToolForWithTheSameCaller) {
  boost::asio::io_context io;
  Callers h;
  const auto chat = std::filesystem::temp_directory_path() / "chat-folder";
  ASSERT_TRUE(run_bounded(io, h.call_tool_as("t", boost::json::object(), std::string("chat-A"), chat, protocol::Author::fresh())));
  ASSERT_TRUE(run_bounded(io, h.call_tool_for("t", boost::json::object(), std::nullopt, std::nullopt)));
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[0].first, std::optional<std::string>("chat-A"));
  EXPECT_EQ(h.calls[0].second, std::optional(chat));
  EXPECT_EQ(h.calls[1].first, std::nullopt);
  EXPECT_EQ(h.calls[1].second, std::nullopt);
}

}  // namespace
}  // namespace exthost::runtime

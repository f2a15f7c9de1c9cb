// The protocol surfaces with real children: command.invoke under its budget, provider
// completion, streaming and the tool loop, info, settings editor, sidecar arguments.
#include <gtest/gtest.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <csignal>

#include "../support/bounded.hpp"
#include "../support/fake_extension.hpp"
#include "../support/proc.hpp"
#include "runtime/invoke_collected.hpp"
#include "runtime/process_extension.hpp"
#include "runtime/provider_tool_loop.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using exthost::testing::run_bounded;
using runtime::ProcessExtension;
using namespace protocol;

class SurfacesTest : public ::testing::Test {
 protected:
  void SetUp() override { std::signal(SIGPIPE, SIG_IGN); }
  std::shared_ptr<ProcessExtension> start(std::vector<std::string> args) {
    return exthost::testing::start_fake(io, std::move(args));
  }
  runtime::CollectedInvocation invoke(ProcessExtension& ext, std::string command, std::vector<std::string> args) {
    auto r = run_bounded(io, runtime::invoke_command_collected(ext, std::move(command), std::move(args), "req-1"),
                         std::chrono::seconds(60));
    if (!r) return {Error::internal("hung"), {}};
    return std::move(*r);
  }
  asio::io_context io;
};

std::string text_of(const runtime::InvokeCommandEvent& e) {
  return wire::to_json(std::holds_alternative<CommandOutputEvent>(e) ? to_json(std::get<CommandOutputEvent>(e))
                                                                     : to_json(std::get<TaskEvent>(e)));
}

TEST_F(SurfacesTest, AHostileCommandOutputFloodIsBoundedWhenInvokeResolves) {
  auto ext = start({"commands"});
  ASSERT_TRUE(ext);
  const long rss_before = exthost::testing::rss_kib();
  auto out = invoke(*ext, "flood", {"640", "65536"});
  const long grown_kib = exthost::testing::rss_kib() - rss_before;
  ASSERT_TRUE(out.result.ok()) << out.result.error().message;
  EXPECT_EQ(wire::to_json(out.result.value()), R"({"status":"ok","emitted":640,"payload_bytes":41943040})");
  const auto& c = out.report.counters;
  EXPECT_EQ(c.produced_events, 641u);
  EXPECT_EQ(c.produced_payload_bytes, 41943040u);
  EXPECT_EQ(c.consumed_events, 641u);
  EXPECT_EQ(c.retained_events, 5u);
  EXPECT_EQ(c.retained_payload_bytes, 262144u);
  EXPECT_EQ(c.truncated_events, 0u);
  EXPECT_EQ(c.dropped_events, 636u);
  EXPECT_EQ(c.dropped_payload_bytes, 636u * 65536);
  EXPECT_TRUE(c.saw_done);
  ASSERT_EQ(out.report.events.size(), 5u);
  EXPECT_EQ(text_of(out.report.events[4]), R"({"kind":"done"})");
  auto notice = out.report.limit_notice();
  ASSERT_TRUE(notice);
  EXPECT_NE(notice->message.find("41943040"), std::string::npos) << notice->message;
  EXPECT_FALSE(notice->severity_error);
  if (exthost::testing::k_memory_is_measurable) {
    EXPECT_LT(grown_kib, 64 * 1024) << "40 MiB of output must not be retained";
  }
  run_bounded(io, ext->shutdown());
}

TEST_F(SurfacesTest, CancellingAnInvokeMidFloodReleasesTheCollectorAndTheExtensionStops) {
  auto ext = start({"commands"});
  ASSERT_TRUE(ext);
  runtime::InvokeEventChannel channel(io.get_executor());
  auto cancelled_after = [&]() -> asio::awaitable<runtime::InvokeOutputReport> {
    asio::steady_timer cancel_at(io.get_executor(), std::chrono::milliseconds(300));
    std::vector<std::string> args{"65536"};  // no initializer list inside a co_await (GCC 12)
    auto both = co_await ((ext->invoke_command("flood_forever", std::move(args), "req-1", channel) ||
                           cancel_at.async_wait(asio::as_tuple(asio::use_awaitable))) &&
                          channel.collect());
    co_return std::move(std::get<1>(both));
  };
  auto report = run_bounded(io, cancelled_after(), std::chrono::seconds(5));
  ASSERT_TRUE(report) << "the collector is released within 5 s";
  const auto& c = report->counters;
  EXPECT_LE(c.retained_payload_bytes, runtime::k_invoke_retained_byte_budget + runtime::k_invoke_control_reserve_bytes);
  EXPECT_EQ(c.consumed_payload_bytes, c.retained_payload_bytes + c.truncated_payload_bytes + c.dropped_payload_bytes);
  EXPECT_EQ(c.consumed_events, c.retained_events + c.dropped_events);
  EXPECT_GE(c.produced_events, c.consumed_events);
  EXPECT_FALSE(c.saw_done);
  EXPECT_TRUE(run_bounded(io, ext->shutdown(), std::chrono::seconds(10)));
}

TEST_F(SurfacesTest, BoundedCommandOutputIsPreservedVerbatim) {
  auto ext = start({"commands"});
  ASSERT_TRUE(ext);
  auto out = invoke(*ext, "small", {});
  ASSERT_TRUE(out.result.ok());
  std::vector<std::string> seen;
  for (const auto& e : out.report.events) seen.push_back(text_of(e));
  EXPECT_EQ(seen, (std::vector<std::string>{
                      R"({"kind":"text","content":"hello"})",
                      R"({"kind":"system","content":"working"})",
                      R"({"method":"task.start","id":"t1","label":"Fetching","kind":"download"})",
                      R"({"method":"task.update","id":"t1","current":1,"total":2})",
                      R"({"method":"task.log","id":"t1","line":"fetched shard 1"})",
                      R"({"method":"task.done","id":"t1"})",
                      R"({"kind":"table","headers":["name","size"],"rows":[["a","1"],["b","22"]]})",
                      R"({"kind":"error","content":"one minor problem"})",
                      R"({"kind":"done"})"}));
  EXPECT_FALSE(out.report.is_limited());
  EXPECT_FALSE(out.report.limit_notice());
  auto failing = invoke(*ext, "fail", {});
  ASSERT_FALSE(failing.result.ok());
  EXPECT_EQ(failing.result.error().message, "Extension error: boom");
  run_bounded(io, ext->shutdown());
}

TEST_F(SurfacesTest, AProviderStreamOfTenThousandDeltasReachesASlowConsumerInOrder) {
  auto ext = start({"provider", "10000"});
  ASSERT_TRUE(ext);
  runtime::ProviderEventSink sink(io.get_executor());
  std::size_t deltas = 0, peak = 0;
  bool in_order = true, saw_usage = false, saw_done = false;
  auto consume = [&]() -> asio::awaitable<void> {
    asio::steady_timer pause(io.get_executor());
    for (;;) {
      peak = std::max(peak, sink.size());
      auto e = co_await sink.pop();
      if (!e) co_return;
      if (const auto* t = std::get_if<stream_event::TextDelta>(&*e)) {
        in_order = in_order && t->text == std::to_string(deltas) + ",";
        if (++deltas % 500 == 0) {  // a slow consumer
          pause.expires_after(std::chrono::milliseconds(2));
          co_await pause.async_wait(asio::use_awaitable);
        }
      } else if (std::holds_alternative<stream_event::Usage>(*e)) {
        saw_usage = true;
      } else if (std::holds_alternative<stream_event::Done>(*e)) {
        saw_done = true;
        co_return;
      }
    }
  };
  const long rss_before = exthost::testing::rss_kib();
  auto both = [&]() -> asio::awaitable<Result<ProviderCompleteResult>> {
    co_return co_await (ext->provider_stream(boost::json::parse(R"({"provider_id":"mock","model_id":"m1","messages":[]})"), sink) &&
                        consume());
  };
  auto r = run_bounded(io, both(), std::chrono::seconds(60));
  ASSERT_TRUE(r && r->ok()) << (r && !r->ok() ? r->error().message : "");
  EXPECT_EQ(deltas, 10000u);
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(saw_usage);
  EXPECT_TRUE(saw_done);
  EXPECT_LE(peak, runtime::k_provider_event_queue_capacity);
  if (exthost::testing::k_memory_is_measurable) {
    EXPECT_LT(exthost::testing::rss_kib() - rss_before, 32 * 1024);
  }
  EXPECT_EQ(wire::to_json((*r)->content), R"([{"type":"text","text":"streamed"}])");
  EXPECT_EQ((*r)->stop_reason, std::optional<std::string>("end_turn"));
  run_bounded(io, ext->shutdown());
}

TEST_F(SurfacesTest, AProviderStreamPropagatesTheExtensionsError) {
  auto ext = start({"provider", "0"});
  ASSERT_TRUE(ext);
  runtime::ProviderEventSink sink(io.get_executor());
  auto r = run_bounded(io, ext->provider_stream(boost::json::parse(R"({"messages":[],"fail":true})"), sink));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->ok());
  EXPECT_EQ(r->error().message, "Extension error: boom");
  EXPECT_EQ(std::get<stream_event::TextDelta>(*sink.try_pop()).text, "partial") << "events before the error arrive";
  run_bounded(io, ext->shutdown());
}

TEST_F(SurfacesTest, AProviderStreamCompletesWhenTheConsumerIsGone) {
  auto ext = start({"provider", "100"});
  ASSERT_TRUE(ext);
  runtime::ProviderEventSink sink(io.get_executor());
  sink.abandon();
  auto r = run_bounded(io, ext->provider_stream(boost::json::parse(R"({"messages":[]})"), sink));
  ASSERT_TRUE(r && r->ok());
  run_bounded(io, ext->shutdown());
}

// Runs "echo" and nothing else.
class EchoOnly final : public runtime::ToolGate, public runtime::ToolRunner {
 public:
  asio::awaitable<std::optional<std::string>> deny(const ProviderToolUse& use) override {
    if (use.name == "echo") co_return std::nullopt;
    co_return "not allowed";
  }
  asio::awaitable<Result<std::string>> run(const ProviderToolUse& use) override {
    co_return "echo: " + std::string(use.input.as_object().at("text").as_string());
  }
};

TEST_F(SurfacesTest, TheProviderToolLoopReturnsTheFinalTextAfterAToolResultTurn) {
  auto ext = start({"provider", "0"});
  ASSERT_TRUE(ext);
  EchoOnly tools;
  std::uint32_t requested = 99;
  auto r = run_bounded(io, runtime::complete_provider_with_tools(*ext, boost::json::parse(R"({"messages":[]})"), tools, tools,
                                                                 1024, 4, requested));
  ASSERT_TRUE(r && r->ok()) << (r && !r->ok() ? r->error().message : "");
  EXPECT_EQ(wire::to_json((*r)->content), R"([{"type":"text","text":"final: \"echo: hi\""}])");
  EXPECT_EQ(requested, 1u);
  runtime::DenyAllTools deny;
  auto denied = run_bounded(io, runtime::complete_provider_with_tools(*ext, boost::json::parse(R"({"messages":[]})"), deny,
                                                                      deny, 1024, 4, requested));
  ASSERT_TRUE(denied && denied->ok());
  EXPECT_EQ(wire::to_json((*denied)->content),
            R"([{"type":"text","text":"final: \"tool 'echo' is not available to extension providers\""}])");
  auto limited = run_bounded(io, runtime::complete_provider_with_tools(*ext, boost::json::parse(R"({"messages":[]})"), tools,
                                                                       tools, 1024, 1, requested));
  ASSERT_TRUE(limited);
  ASSERT_FALSE(limited->ok());
  EXPECT_EQ(limited->error().message, "extension provider 'fake' exceeded provider tool-use iteration limit (1)");
  EXPECT_EQ(requested, 1u) << "counted even when the limit stops the loop";
  run_bounded(io, ext->shutdown());
}

TEST_F(SurfacesTest, InfoSettingsEditorAndSidecarArguments) {
  auto ext = start({"commands"});
  ASSERT_TRUE(ext);
  auto info = run_bounded(io, ext->get_info());
  ASSERT_TRUE(info && info->ok());
  EXPECT_EQ((*info)->build->backend, "cpu");
  EXPECT_EQ((*info)->models.at(0).display_name, std::optional<std::string>("Tiny"));
  EXPECT_TRUE((*info)->models.at(0).installed);
  auto open = run_bounded(io, ext->settings_editor_open("voice", "model"));
  ASSERT_TRUE(open && open->ok());
  EXPECT_EQ(wire::to_json(open->value()), R"({"method":"settings.editor.open","params":{"category":"voice","field":"model"}})");
  auto key = run_bounded(io, ext->settings_editor_key("voice", "model", "Ctrl+Char(j)"));
  ASSERT_TRUE(key && key->ok());
  EXPECT_EQ(wire::to_json(key->value()),
            R"x({"method":"settings.editor.key","params":{"key":"Ctrl+Char(j)","category":"voice","field":"model"}})x");
  auto commit = run_bounded(io, ext->settings_editor_commit("voice", "model", boost::json::value("model:tiny.en")));
  ASSERT_TRUE(commit && commit->ok());
  auto args = run_bounded(io, ext->sidecar_spawn_args());
  ASSERT_TRUE(args && args->ok());
  EXPECT_EQ((*args)->args, (std::vector<std::string>{"--model-path", "/x"}));
  EXPECT_EQ((*args)->language, std::optional<std::string>("en"));
  run_bounded(io, ext->shutdown());
}

TEST_F(SurfacesTest, UnsupportedMethodsAreApplicationErrors) {
  auto ext = start({"unknown-method"});
  ASSERT_TRUE(ext);
  auto info = run_bounded(io, ext->get_info());
  ASSERT_TRUE(info);
  ASSERT_FALSE(info->ok());
  EXPECT_EQ(info->error().message, "Extension error: unknown method");
  EXPECT_EQ(ext->restart_count(), 0u);
  run_bounded(io, ext->shutdown());
}

}  // namespace
}  // namespace exthost

// runtime/provider_tool_loop.hpp — a provider that asks for tools (seed:
// complete_provider_with_tools, execute_provider_tool_use).
//
// The loop calls provider.complete; while the answer holds tool_use blocks, it sends the
// assistant content back with one tool_result per request, up to `max_iterations` rounds.
// Which tools may run and how is the embedding application's: it implements ToolGate and
// ToolRunner. The defaults deny every tool, so nothing runs unless the host says so.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "exthost/result.hpp"
#include "protocol/provider.hpp"
#include "runtime/extension_handler.hpp"

namespace exthost::runtime {

// Decides whether a provider-requested tool may run; the reason becomes the tool_result.
// Awaited, so a gate may decide elsewhere than on the I/O thread.
class ToolGate {
 public:
  virtual ~ToolGate() = default;
  virtual boost::asio::awaitable<std::optional<std::string>> deny(const protocol::ProviderToolUse& use) = 0;
};

// Runs an allowed tool; its output or failure becomes the tool_result.
class ToolRunner {
 public:
  virtual ~ToolRunner() = default;
  virtual boost::asio::awaitable<Result<std::string>> run(const protocol::ProviderToolUse& use) = 0;
};

// The default of both: nothing runs.
class DenyAllTools final : public ToolGate, public ToolRunner {
 public:
  static std::string reason(const protocol::ProviderToolUse& use) {
    return "tool '" + use.name + "' is not available to extension providers";
  }
  boost::asio::awaitable<std::optional<std::string>> deny(const protocol::ProviderToolUse& use) override {
    co_return reason(use);
  }
  boost::asio::awaitable<Result<std::string>> run(const protocol::ProviderToolUse& use) override {
    co_return Error::usage(reason(use));
  }
};

// One tool_result block for `use`: denied, failed ("Tool execution failed: …") or its output
// cut to `max_tool_output` bytes (UTF-8 safe).
boost::asio::awaitable<boost::json::value> execute_provider_tool_use(const protocol::ProviderToolUse& use, ToolGate& gate,
                                                                     ToolRunner& runner, std::size_t max_tool_output);

// The interior tool loop. `tools_requested` counts every tool the provider asked for, and
// stays honest on every error path (it is an out-parameter for that reason).
boost::asio::awaitable<Result<protocol::ProviderCompleteResult>> complete_provider_with_tools(
    ExtensionHandler& handler, boost::json::value params, ToolGate& gate, ToolRunner& runner, std::size_t max_tool_output,
    std::size_t max_iterations, std::uint32_t& tools_requested);

}  // namespace exthost::runtime

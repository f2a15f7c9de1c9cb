#include "runtime/provider_tool_loop.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "util/text.hpp"

namespace exthost::runtime {

boost::asio::awaitable<boost::json::value> execute_provider_tool_use(const protocol::ProviderToolUse& use, ToolGate& gate,
                                                                     ToolRunner& runner, std::size_t max_tool_output) {
  boost::json::object block;
  block["type"] = "tool_result";
  block["tool_use_id"] = use.id;
  if (auto reason = co_await gate.deny(use)) {  // denied before anything runs
    block["content"] = *reason;
    block["is_error"] = true;
    co_return block;
  }
  auto output = co_await runner.run(use);
  if (output) {
    block["content"] = std::string(util::utf8_prefix(output.value(), max_tool_output));
  } else {
    const std::string failed = "Tool execution failed: " + output.error().message;
    block["content"] = std::string(util::utf8_prefix(failed, max_tool_output));
    block["is_error"] = true;
  }
  co_return block;
}

boost::asio::awaitable<Result<protocol::ProviderCompleteResult>> complete_provider_with_tools(
    ExtensionHandler& handler, boost::json::value params, ToolGate& gate, ToolRunner& runner, std::size_t max_tool_output,
    std::size_t max_iterations, std::uint32_t& tools_requested) {
  if (max_iterations == 0) max_iterations = 1;
  tools_requested = 0;
  const std::string limit = "extension provider '" + handler.id() + "' exceeded provider tool-use iteration limit (" +
                            std::to_string(max_iterations) + ")";
  if (!params.is_object()) co_return Error::usage("provider params must be a JSON object");
  for (std::size_t iteration = 0; iteration < max_iterations; ++iteration) {
    auto result = co_await handler.provider_complete(params);
    if (!result) co_return result;
    auto uses = protocol::extract_provider_tool_uses(result->content);
    if (!uses) co_return std::move(uses).error();
    if (uses->empty()) co_return result;
    // Counted before the limit check: the provider did ask for these.
    tools_requested += static_cast<std::uint32_t>(uses->size());
    if (iteration + 1 == max_iterations) co_return Error::extension(limit);
    auto& messages = params.as_object()["messages"];
    if (!messages.is_array()) messages = boost::json::array();
    boost::json::object assistant;
    assistant["role"] = "assistant";
    assistant["content"] = result->content;
    messages.as_array().push_back(std::move(assistant));
    boost::json::array results;
    for (const auto& use : *uses) results.push_back(co_await execute_provider_tool_use(use, gate, runner, max_tool_output));
    boost::json::object user;
    user["role"] = "user";
    user["content"] = std::move(results);
    messages.as_array().push_back(std::move(user));
  }
  co_return Error::extension(limit);
}

}  // namespace exthost::runtime

// host/embedder_tools.hpp — the embedder's ProviderTools as the provider tool loop's gate
// and runner.
//
// deny and run are the embedder's code, so they never run on the I/O thread: each runs on
// the Host's tool workers and is awaited from the I/O thread. A slow tool then holds back
// only its own loop, and a tool may call the Host's blocking methods. An exception from
// deny denies the tool; one from run fails it; both are logged.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "exthost/host.hpp"
#include "runtime/provider_tool_loop.hpp"

namespace exthost::host {

class EmbedderTools final : public runtime::ToolGate, public runtime::ToolRunner {
 public:
  EmbedderTools(ProviderTools tools, boost::asio::any_io_executor workers);
  boost::asio::awaitable<std::optional<std::string>> deny(const protocol::ProviderToolUse& use) override;
  boost::asio::awaitable<Result<std::string>> run(const protocol::ProviderToolUse& use) override;

 private:
  std::shared_ptr<const ProviderTools> m_tools;  // shared with the worker running one of them
  boost::asio::any_io_executor m_workers;
  runtime::DenyAllTools m_default;  // when the embedder gave no run (or no deny)
};

}  // namespace exthost::host

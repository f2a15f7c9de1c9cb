#include "host/embedder_tools.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "util/exception_text.hpp"
#include "util/log.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace asio = boost::asio;

namespace {

asio::awaitable<std::optional<std::string>> deny_on_worker(std::shared_ptr<const ProviderTools> tools, std::string name,
                                                           std::string input) {
  try {
    co_return tools->deny(name, input);
  } catch (...) {
    const std::string why = "ProviderTools::deny: " + util::exception_text(std::current_exception());
    util::log().error("tool '{}' denied: {}", name, why);
    co_return why;
  }
}

asio::awaitable<Result<std::string>> run_on_worker(std::shared_ptr<const ProviderTools> tools, std::string name,
                                                   std::string input) {
  try {
    co_return tools->run(name, input);
  } catch (...) {
    const std::string why = "ProviderTools::run: " + util::exception_text(std::current_exception());
    util::log().error("tool '{}' failed: {}", name, why);
    co_return Error::internal(why);
  }
}

}  // namespace

EmbedderTools::EmbedderTools(ProviderTools tools, asio::any_io_executor workers)
    : m_tools(std::make_shared<const ProviderTools>(std::move(tools))), m_workers(std::move(workers)) {}

asio::awaitable<std::optional<std::string>> EmbedderTools::deny(const protocol::ProviderToolUse& use) {
  if (!m_tools->deny || !m_tools->run) co_return co_await m_default.deny(use);
  co_return co_await asio::co_spawn(m_workers, deny_on_worker(m_tools, use.name, wire::to_json(use.input)),
                                    asio::use_awaitable);
}

asio::awaitable<Result<std::string>> EmbedderTools::run(const protocol::ProviderToolUse& use) {
  if (!m_tools->run) co_return co_await m_default.run(use);
  co_return co_await asio::co_spawn(m_workers, run_on_worker(m_tools, use.name, wire::to_json(use.input)),
                                    asio::use_awaitable);
}

}  // namespace exthost::host

// exthost/asio.hpp — the Host's operations as Asio asynchronous operations, for embedders
// that already run Asio (opt-in: this header includes Asio; <exthost/host.hpp> does not).
//
//   boost::asio::awaitable<void> agent(exthost::Host& host) {
//     auto info = co_await exthost::async_load(host, "plugins/echo", boost::asio::use_awaitable);
//     auto out = co_await exthost::async_call_tool(host, "echo:echo", R"({"text":"hi"})", {},
//                                                  boost::asio::use_awaitable);
//   }
//
// Each completes with a Result<T> (no exception, no error_code: failures are values, as in
// the blocking API) on the completion handler's associated executor — in a coroutine, the
// coroutine's own. The work runs on the Host's I/O thread meanwhile.
//
// Cancellation: async_call_tool, async_emit_hook, async_invoke_command and async_complete
// honour Asio per-operation cancellation of type terminal (a cancellation slot bound to
// the token, `co_await (op || timer)`, a parallel group): the operation completes with
// ErrorKind::cancelled, and the extension's request is abandoned as with the std::stop_token
// of the blocking API (see <exthost/host.hpp>). A cancelled async_invoke_command completes
// with the output collected so far (CommandOutput::cancelled). async_load and async_unload
// are bounded by their own deadlines and ignore cancellation. Lifetime: destroy the Host
// before the execution context its completions are posted to (its callback thread may be
// posting one).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <memory>
#include <stop_token>
#include <utility>

#include "exthost/host.hpp"

namespace exthost {
namespace detail {

// Starts `op(completion, stop)` and delivers its Result<T> to the handler on the handler's
// own executor, keeping that executor busy until then. A terminal cancellation arriving on
// the handler's cancellation slot requests `stop`; the slot is cleared before completing.
template <class T, class Op, class Token>
auto initiate(Op op, Token&& token) {
  return boost::asio::async_initiate<Token, void(Result<T>)>(
      [op = std::move(op)](auto handler) mutable {
        using Handler = decltype(handler);
        auto ex = boost::asio::get_associated_executor(handler);
        auto work = std::make_shared<boost::asio::executor_work_guard<decltype(ex)>>(ex);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        std::stop_token stop;
        if (slot.is_connected()) {
          auto source = std::make_shared<std::stop_source>();
          stop = source->get_token();
          slot.assign([source](boost::asio::cancellation_type type) {
            if ((type & boost::asio::cancellation_type::terminal) != boost::asio::cancellation_type::none) {
              source->request_stop();
            }
          });
        }
        auto shared = std::make_shared<Handler>(std::move(handler));
        op(
            [shared, work](Result<T> r) {
              boost::asio::post(work->get_executor(), [shared, work, r = std::move(r)]() mutable {
                auto done_slot = boost::asio::get_associated_cancellation_slot(*shared);
                if (done_slot.is_connected()) done_slot.clear();
                (*shared)(std::move(r));
                work->reset();
              });
            },
            std::move(stop));
      },
      token);
}

}  // namespace detail

template <class Token>
auto async_load(Host& host, std::filesystem::path plugin_dir, Token&& token) {
  return detail::initiate<ExtensionInfo>(
      [&host, dir = std::move(plugin_dir)](Completion<ExtensionInfo> done, std::stop_token) {
        host.load(dir, std::move(done));
      },
      std::forward<Token>(token));
}

template <class Token>
auto async_unload(Host& host, std::string id, Token&& token) {
  return detail::initiate<void>([&host, id = std::move(id)](Completion<void> done, std::stop_token) { host.unload(id, std::move(done)); },
                                std::forward<Token>(token));
}

// `name` is a runtime name ("plugin:tool") or an API name; the call goes through the hooks.
template <class Token>
auto async_call_tool(Host& host, std::string name, std::string input_json, ToolCallContext context, Token&& token) {
  return detail::initiate<std::string>(
      [&host, name = std::move(name), input = std::move(input_json), context = std::move(context)](
          Completion<std::string> done,
          std::stop_token stop) { host.call_named_tool(name, input, context, std::move(done), std::move(stop)); },
      std::forward<Token>(token));
}

template <class Token>
auto async_emit_hook(Host& host, std::string event_json, Token&& token) {
  return detail::initiate<std::string>(
      [&host, event = std::move(event_json)](Completion<std::string> done, std::stop_token stop) {
        host.emit_hook(event, std::move(done), std::move(stop));
      },
      std::forward<Token>(token));
}

template <class Token>
auto async_invoke_command(Host& host, std::string id, std::string command, std::vector<std::string> args,
                          Token&& token) {
  return detail::initiate<CommandOutput>(
      [&host, id = std::move(id), command = std::move(command), args = std::move(args)](
          Completion<CommandOutput> done,
          std::stop_token stop) { host.invoke_command(id, command, args, std::move(done), std::move(stop)); },
      std::forward<Token>(token));
}

template <class Token>
auto async_complete(Host& host, std::string id, std::string params_json, Token&& token) {
  return detail::initiate<std::string>(
      [&host, id = std::move(id), params = std::move(params_json)](Completion<std::string> done,
                                                                    std::stop_token stop) {
        host.complete(id, params, std::move(done), std::move(stop));
      },
      std::forward<Token>(token));
}

}  // namespace exthost

// runtime/extension_handler.hpp — what the host asks of an extension runtime (seed 002).
//
// Every operation a runtime may support, with the reference's default answers: a runtime
// that does not implement one says "extension runtime does not support …". Coroutines run
// on the host's I/O thread. Cancellation (every awaitable here): when the caller abandons
// an operation, its request is abandoned too (a late reply is dropped and counted); the
// child keeps running and the subscription, if any, is released.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exthost/health.hpp"
#include "exthost/result.hpp"
#include "protocol/author.hpp"
#include "protocol/hook.hpp"
#include "protocol/plugin_info.hpp"
#include "protocol/provider.hpp"
#include "rpc/bounded_queue.hpp"
#include "runtime/invoke_output.hpp"
#include "rpc/inbox.hpp"

namespace exthost::runtime {

// Eight stream events in flight to the consumer (reference): a slow consumer slows the
// extension instead of growing host memory.
inline constexpr std::size_t k_provider_event_queue_capacity = 8;

// Where provider.stream events go: the caller pops while the call runs.
class ProviderEventSink : public rpc::BoundedQueue<protocol::ProviderStreamEvent> {
 public:
  explicit ProviderEventSink(const boost::asio::any_io_executor& ex)
      : rpc::BoundedQueue<protocol::ProviderStreamEvent>(ex, k_provider_event_queue_capacity) {}
};

// The default answers name their parameters for documentation, and use none of them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

class ExtensionHandler {
 public:
  virtual ~ExtensionHandler() = default;

  virtual const std::string& id() const = 0;

  // The child actually serving, without waiting for any lock or I/O; any thread. nullopt
  // means unsupported or unavailable, never healthy.
  virtual std::optional<Lifecycle> lifecycle_snapshot() const { return std::nullopt; }

  // One hook event (hook.handle). A value is the extension's answer; a reply that does not
  // decode is mapped as the reference does (a malformed "modify" blocks with "Extension
  // returned malformed modify result") or else fails with cause `protocol`. An Error says
  // why there is no answer, by its cause: `timeout` (the hook deadline), `application` (the
  // extension answered an error), `protocol`, `not_running`, `stopped`, `restart_exhausted`,
  // `spawn_failed` or `transport`; its extension_id is this extension. What a failure does to
  // the event is the caller's decision (the hook bus: fail open, or closed for an
  // `on_error: block` subscription); a failure is not logged here.
  virtual boost::asio::awaitable<Result<protocol::HookResult>> handle(const protocol::HookEvent& event) = 0;
  // handle() for a caller that must never start or restart the extension (no child serving:
  // cause `not_running`, or `stopped` / `restart_exhausted`).
  virtual boost::asio::awaitable<Result<protocol::HookResult>> handle_no_spawn(const protocol::HookEvent& event) {
    co_return co_await handle(event);
  }
  // handle() that sets `*written` (I/O thread) once the request is handed to the child: one
  // still waiting in the host for a place under the extension's declared concurrency has
  // not been, and its silence says nothing about the extension. The default has no such
  // wait: it is written at once.
  virtual boost::asio::awaitable<Result<protocol::HookResult>> handle_tracked(const protocol::HookEvent& event,
                                                                              std::shared_ptr<bool> written) {
    *written = true;
    co_return co_await handle(event);
  }

  // A tool call for a conversation (`session_id`; none for a worker) in folder `cwd`
  // (none: the host's current directory).
  virtual boost::asio::awaitable<Result<boost::json::value>> call_tool_for(
      std::string name, boost::json::value input, std::optional<std::string> session_id,
      std::optional<std::filesystem::path> cwd) {
    co_return Error::extension("extension runtime does not support tool.call");
  }
  // call_tool_for() naming the run that calls (tool.call params.caller).
  virtual boost::asio::awaitable<Result<boost::json::value>> call_tool_as(
      std::string name, boost::json::value input, std::optional<std::string> session_id,
      std::optional<std::filesystem::path> cwd, std::optional<protocol::Author> caller) {
    co_return co_await call_tool_for(std::move(name), std::move(input), std::move(session_id), std::move(cwd));
  }

  // One model turn through an extension's provider.
  virtual boost::asio::awaitable<Result<protocol::ProviderCompleteResult>> provider_complete(boost::json::value params) {
    co_return Error::extension("extension runtime does not support provider.complete");
  }
  // A streamed model turn: every provider.stream.event goes to `sink`, in order (awaited:
  // a slow consumer slows the extension); the result is the final aggregate. A consumer that
  // abandons the sink stops the forwarding, not the call.
  virtual boost::asio::awaitable<Result<protocol::ProviderCompleteResult>> provider_stream(boost::json::value params,
                                                                                          ProviderEventSink& sink) {
    co_return Error::extension("provider.stream is not supported by this extension");
  }
  // A plugin slash command: command.output for `request_id` and every task.* go to `channel`,
  // which the caller must collect concurrently (see invoke_command_collected()).
  virtual boost::asio::awaitable<Result<boost::json::value>> invoke_command(std::string command,
                                                                           std::vector<std::string> args,
                                                                           std::string request_id,
                                                                           InvokeEventChannel& channel) {
    co_return Error::extension("extension runtime does not support command.invoke");
  }
  virtual boost::asio::awaitable<Result<protocol::PluginInfo>> get_info() {
    co_return Error::extension("extension runtime does not support info.get");
  }
  virtual boost::asio::awaitable<Result<boost::json::value>> settings_editor_open(std::string category,
                                                                                 std::string field) {
    co_return Error::extension("extension runtime does not support settings.editor.open");
  }
  virtual boost::asio::awaitable<Result<boost::json::value>> settings_editor_key(std::string category,
                                                                                std::string field, std::string key) {
    co_return Error::extension("extension runtime does not support settings.editor.key");
  }
  virtual boost::asio::awaitable<Result<boost::json::value>> settings_editor_commit(std::string category,
                                                                                   std::string field,
                                                                                   boost::json::value value) {
    co_return Error::extension("extension runtime does not support settings.editor.commit");
  }
  virtual boost::asio::awaitable<Result<protocol::SidecarSpawnArgs>> sidecar_spawn_args() {
    co_return Error::extension("extension runtime does not support sidecar.spawn_args");
  }

  // Stops the extension for good.
  virtual boost::asio::awaitable<void> shutdown() = 0;

  // Every notification the extension sends from now on, until unsubscribed or the
  // transport ends. Default: a subscription (on `ex`) that has already ended.
  virtual rpc::Subscription subscribe_notifications(const boost::asio::any_io_executor& ex) {
    return rpc::Subscription::ended(ex);
  }

  virtual Health health() const { return Health::running; }
  virtual std::size_t restart_count() const { return 0; }
};

#pragma GCC diagnostic pop

}  // namespace exthost::runtime

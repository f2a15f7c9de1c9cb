#include "runtime/notification_forwarding.hpp"

#include <boost/json/serialize.hpp>

#include "util/log.hpp"

namespace exthost::runtime {

boost::asio::awaitable<bool> forward_invoke_command_frame(std::string_view extension_id, std::string_view request_id,
                                                          InvokeEventChannel& sink, bool& sink_open,
                                                          rpc::NotificationFrame frame) {
  bool saw_done = false;
  if (frame.method == "command.output") {
    auto parsed = protocol::parse_command_output(frame.params);
    if (!parsed) {
      util::log().warn("extension '{}': Skipping malformed command.output notification: {}", extension_id,
                       parsed.error().message);
      co_return false;
    }
    if (parsed->request_id != request_id) {
      util::log().trace("extension '{}': Ignoring command.output for unrelated request_id", extension_id);
      co_return false;
    }
    saw_done = std::holds_alternative<protocol::command_output::Done>(parsed->event);
    if (sink_open) {
      InvokeCommandEvent event = std::move(parsed).value().event;
      if (!co_await sink.send(std::move(event))) sink_open = false;
    }
    co_return saw_done;
  }
  if (protocol::is_task_method(frame.method)) {
    auto parsed = protocol::parse_task_event(frame.method, frame.params);
    if (!parsed) {
      util::log().warn("extension '{}': Skipping malformed task notification {}: {}", extension_id, frame.method,
                       parsed.error().message);
      co_return false;
    }
    if (sink_open) {
      InvokeCommandEvent event = std::move(parsed).value();
      if (!co_await sink.send(std::move(event))) sink_open = false;
    }
    co_return false;
  }
  util::log().trace("extension '{}': Ignoring non-command/task notification {} during command.invoke", extension_id,
                    frame.method);
  co_return false;
}

boost::asio::awaitable<void> forward_provider_stream_frame(std::string_view extension_id, ProviderEventSink& sink,
                                                           bool& sink_open, rpc::NotificationFrame frame) {
  if (frame.method != "provider.stream.event") {
    util::log().trace("extension '{}': Ignoring non-stream notification {} during provider.stream", extension_id,
                      frame.method);
    co_return;
  }
  auto parsed = protocol::parse_provider_stream_event(frame.params);
  if (!parsed) {
    util::log().warn("extension '{}': Skipping malformed provider.stream.event notification: {}", extension_id,
                     parsed.error().message);
    co_return;
  }
  if (sink_open && !co_await sink.push(std::move(parsed).value())) sink_open = false;
}

}  // namespace exthost::runtime

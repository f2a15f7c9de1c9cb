// runtime/notification_forwarding.hpp — routing one notification frame to the caller of
// command.invoke or provider.stream (seed: forward_invoke_command_frame,
// forward_provider_stream_frame).
//
// Malformed events are logged and skipped: they never abort the surrounding call. Sends are
// awaited (backpressure); once a sink is found closed, `sink_open` latches false and later
// frames are consumed and dropped so that the call can still complete.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "rpc/notification_queue.hpp"
#include "runtime/extension_handler.hpp"
#include "runtime/invoke_output.hpp"

namespace exthost::runtime {

// command.output for `request_id` and every task.* (whatever its request) go to `sink`;
// anything else is ignored. Returns whether the frame was the `done` marker of this request
// (also when the sink is closed).
boost::asio::awaitable<bool> forward_invoke_command_frame(std::string_view extension_id, std::string_view request_id,
                                                          InvokeEventChannel& sink, bool& sink_open,
                                                          rpc::NotificationFrame frame);

// provider.stream.event frames go to `sink`; anything else is ignored.
boost::asio::awaitable<void> forward_provider_stream_frame(std::string_view extension_id, ProviderEventSink& sink,
                                                           bool& sink_open, rpc::NotificationFrame frame);

}  // namespace exthost::runtime

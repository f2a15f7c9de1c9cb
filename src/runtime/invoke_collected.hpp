// runtime/invoke_collected.hpp — a command.invoke with its bounded collector (SPEC §6.11.4).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <string>
#include <vector>

#include "exthost/result.hpp"
#include "runtime/extension_handler.hpp"
#include "runtime/invoke_output.hpp"

namespace exthost::runtime {

struct CollectedInvocation {
  Result<boost::json::value> result;  // the command's answer, or why it failed
  InvokeOutputReport report;          // what it printed, within budget, with exact counters
};

// Runs the invocation and its eagerly concurrent collector together, so the extension's
// output is paced and bounded while the call is pending. Cancelling it ends both at once.
// `observer` sees each retained event as it is kept; `pacer` (InvokeEventChannel::pace)
// lets the consumer of those events hold the collector back. `cancelled`, when given, is
// raced against the invocation: if it completes first, the invocation is cancelled (the
// extension's request abandoned), the result is an Error with cause `cancelled`, and the
// report keeps the output collected until then.
using CancelWait = std::function<boost::asio::awaitable<void>()>;
boost::asio::awaitable<CollectedInvocation> invoke_command_collected(ExtensionHandler& handler, std::string command,
                                                                    std::vector<std::string> args,
                                                                    std::string request_id,
                                                                    InvokeOutputBudget budget = {},
                                                                    RetainedEventObserver observer = {},
                                                                    CollectorPacer pacer = {},
                                                                    CancelWait cancelled = {});

// A fresh request id for command.invoke: a random UUID, version 4.
std::string fresh_request_id();

}  // namespace exthost::runtime

#include "runtime/invoke_collected.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <cstdio>
#include <random>

namespace exthost::runtime {

using namespace boost::asio::experimental::awaitable_operators;

namespace {

// The invocation, ended early by `cancelled`: the handler's request is cancelled, which
// closes the channel, so the collector ends with what it kept.
boost::asio::awaitable<Result<boost::json::value>> invoke_or_cancel(ExtensionHandler& handler, std::string command,
                                                                    std::vector<std::string> args,
                                                                    std::string request_id, InvokeEventChannel& channel,
                                                                    CancelWait cancelled) {
  if (!cancelled) {
    co_return co_await handler.invoke_command(std::move(command), std::move(args), std::move(request_id), channel);
  }
  const std::string what = "command '" + command + "' of extension '" + handler.id() + "'";
  auto invocation = handler.invoke_command(std::move(command), std::move(args), std::move(request_id), channel);
  auto raced = co_await (std::move(invocation) || cancelled());
  if (raced.index() == 1) {
    channel.close();
    co_return Error::cancelled(what + " was cancelled").from(handler.id());
  }
  co_return std::get<0>(std::move(raced));
}

}  // namespace

boost::asio::awaitable<CollectedInvocation> invoke_command_collected(ExtensionHandler& handler, std::string command,
                                                                    std::vector<std::string> args,
                                                                    std::string request_id, InvokeOutputBudget budget,
                                                                    RetainedEventObserver observer,
                                                                    CollectorPacer pacer, CancelWait cancelled) {
  auto ex = co_await boost::asio::this_coro::executor;
  InvokeEventChannel channel(ex, budget);
  channel.observe(std::move(observer));
  channel.pace(std::move(pacer));
  auto invocation = invoke_or_cancel(handler, std::move(command), std::move(args), std::move(request_id), channel,
                                     std::move(cancelled));
  auto both = co_await (std::move(invocation) && channel.collect());
  CollectedInvocation out{std::move(std::get<0>(both)), std::move(std::get<1>(both))};
  co_return out;
}

std::string fresh_request_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::uint64_t hi = rng(), lo = rng();
  unsigned char b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<unsigned char>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<unsigned char>(lo >> (56 - 8 * i));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  char out[37];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

}  // namespace exthost::runtime

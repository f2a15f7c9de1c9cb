// fake_extension.hpp — starting the test-only fake extension as a ProcessExtension.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/json/object.hpp>
#include <memory>
#include <string>
#include <vector>

#include "bounded.hpp"
#include "runtime/process_extension.hpp"

namespace exthost::testing {

// Spawns the fake extension in `args`' mode (no handshake); null, with a test failure, if
// the spawn fails.
inline std::shared_ptr<runtime::ProcessExtension> spawn_fake(boost::asio::io_context& io, std::vector<std::string> args,
                                                             runtime::Timeouts timeouts = {},
                                                             runtime::RestartPolicy policy = {},
                                                             runtime::RetryMode retry = runtime::RetryMode::safe) {
  runtime::ProcessSpec spec;
  spec.id = "fake";
  spec.command = EXTHOST_FAKE_EXTENSION;
  spec.args = std::move(args);
  spec.retry = retry;
  auto r = run_bounded(io, runtime::ProcessExtension::spawn(io.get_executor(), spec, timeouts, policy));
  if (!r || !r->ok()) {
    ADD_FAILURE() << "spawning the fake extension failed" << (r ? ": " + r->error().message : std::string());
    return nullptr;
  }
  return std::move(*r).value();
}

// spawn_fake(), then the handshake with an empty config; null on any failure.
inline std::shared_ptr<runtime::ProcessExtension> start_fake(boost::asio::io_context& io, std::vector<std::string> args,
                                                             runtime::Timeouts timeouts = {},
                                                             runtime::RestartPolicy policy = {},
                                                             runtime::RetryMode retry = runtime::RetryMode::safe) {
  auto ext = spawn_fake(io, std::move(args), timeouts, policy, retry);
  if (!ext) return nullptr;
  auto init = run_bounded(io, ext->initialize(std::nullopt, boost::json::object()));
  if (!init || !init->ok()) {
    ADD_FAILURE() << "initializing the fake extension failed" << (init ? ": " + init->error().message : std::string());
    return nullptr;
  }
  return ext;
}

}  // namespace exthost::testing

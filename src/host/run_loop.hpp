// host/run_loop.hpp — runs an io_context on the calling thread, surviving handlers that throw.
#pragma once

#include <boost/asio/io_context.hpp>
#include <string_view>

namespace exthost::host {

// Runs `io` until it is stopped or out of work. A handler that throws is logged at error
// level, naming `thread_name` and the exception, and the loop goes on with the next one.
void run_surviving(boost::asio::io_context& io, std::string_view thread_name);

}  // namespace exthost::host

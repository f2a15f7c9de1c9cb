#include "host/run_loop.hpp"

#include <exception>

#include "util/log.hpp"

namespace exthost::host {

void run_surviving(boost::asio::io_context& io, std::string_view thread_name) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      util::log().error("{}: a handler threw and was abandoned: {}", thread_name, e.what());
    } catch (...) {
      util::log().error("{}: a handler threw a non-standard exception and was abandoned", thread_name);
    }
    // run() may be called again after an exception, without restart().
  }
}

}  // namespace exthost::host

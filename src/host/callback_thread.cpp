#include "host/callback_thread.hpp"

#include "util/exception_text.hpp"
#include "host/run_loop.hpp"
#include "util/log.hpp"

namespace exthost::host {

CallbackThread::CallbackThread() : m_work(std::in_place, m_io.get_executor()) {
  m_thread = std::thread([this] { run_surviving(m_io, "host callback thread"); });
}

CallbackThread::~CallbackThread() { join(); }

void CallbackThread::join() {
  m_work.reset();
  if (m_thread.joinable()) m_thread.join();
}

void CallbackThread::log_thrown(const std::string& what, std::exception_ptr e) {
  util::log().error("{} threw: {}", what, util::exception_text(e));
}

}  // namespace exthost::host

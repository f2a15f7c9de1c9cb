// serve/output_writer.cpp — one thread, a byte-bounded queue, writes that never block.
#include "serve/output_writer.hpp"

#include <limits.h>
#include <stdint.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::server {
namespace {

// What one write(2) to a pipe (or a terminal) may carry once poll(2) said it is writable
// without blocking: a pipe with room for a page takes PIPE_BUF bytes at once.
constexpr std::size_t k_write_chunk = PIPE_BUF;

}  // namespace

OutputWriter::OutputWriter(int fd, std::function<void()> on_room)
    : m_fd(fd), m_chunk(k_write_chunk), m_on_room(std::move(on_room)) {
  m_wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    m_socket = S_ISSOCK(st.st_mode);
    if (S_ISREG(st.st_mode)) m_chunk = SIZE_MAX;  // a file never holds a write back for long
  }
  m_thread = std::thread([this] {
    try {
      run();
    } catch (...) {  // nothing in run() is expected to throw; the output then ends
      util::log().error("serve: the output writer failed; later frames are dropped");
      std::lock_guard lock(m_mutex);
      m_closed = true;
      m_queue.clear();
      m_bytes = 0;
      m_room.notify_all();
    }
  });
}

OutputWriter::~OutputWriter() {
  finish();
  if (m_wake_fd >= 0) ::close(m_wake_fd);
}

bool OutputWriter::push(std::string frame) {
  std::unique_lock lock(m_mutex);
  m_waiting += frame.size();
  m_room.wait(lock, [&] { return m_closed || m_no_wait || m_bytes < k_output_queue_budget; });
  m_waiting -= frame.size();
  if (m_closed) return false;
  m_bytes += frame.size();
  m_queue.push_back(std::move(frame));
  m_work.notify_one();
  return true;
}

void OutputWriter::push_now(std::string frame) {
  std::lock_guard lock(m_mutex);
  if (m_closed) return;
  m_bytes += frame.size();
  m_queue.push_back(std::move(frame));
  m_work.notify_one();
}

bool OutputWriter::accepting() const {
  std::lock_guard lock(m_mutex);
  return m_closed || m_bytes + m_waiting < k_output_queue_budget;
}

void OutputWriter::stop_waiting() {
  std::lock_guard lock(m_mutex);
  m_no_wait = true;
  m_room.notify_all();
}

void OutputWriter::finish(std::chrono::milliseconds bound) {
  {
    std::lock_guard lock(m_mutex);
    if (!m_finishing) {
      m_deadline = (std::chrono::steady_clock::now() + bound).time_since_epoch().count();
      m_has_deadline = true;
      m_finishing = true;
      m_no_wait = true;
    }
    m_work.notify_all();
    m_room.notify_all();
  }
  wake();
  if (m_thread.joinable()) m_thread.join();
}

void OutputWriter::wake() {
  if (m_wake_fd < 0) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(m_wake_fd, &one, sizeof one);
}

void OutputWriter::run() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_work.wait(lock, [&] { return !m_queue.empty() || m_finishing; });
    if (m_queue.empty()) break;  // finishing, everything written
    // The front frame stays queued (and counted) while it is written: a deque keeps
    // references to its elements valid while producers append.
    const std::string& frame = m_queue.front();
    lock.unlock();
    const bool written = write_frame(frame);
    lock.lock();
    const bool was_full = m_bytes + m_waiting >= k_output_queue_budget;
    m_bytes -= frame.size();
    m_queue.pop_front();
    if (!written) {
      m_closed = true;
      m_queue.clear();
      m_bytes = 0;
    }
    const bool room = !written || (was_full && m_bytes + m_waiting < k_output_queue_budget);
    m_room.notify_all();
    if (!written) break;
    if (room && m_on_room) {
      lock.unlock();
      m_on_room();
      lock.lock();
    }
  }
  m_closed = true;
  m_queue.clear();
  m_bytes = 0;
  m_room.notify_all();
  lock.unlock();
  if (m_on_room) m_on_room();
}

bool OutputWriter::write_frame(const std::string& frame) {
  std::size_t off = 0;
  while (off < frame.size()) {
    int timeout_ms = -1;
    if (m_has_deadline) {
      const auto left = std::chrono::steady_clock::duration(m_deadline.load()) - std::chrono::steady_clock::now().time_since_epoch();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        util::log().warn("serve: the client did not read its last {} bytes in time; they are dropped", frame.size() - off);
        return false;
      }
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    }
    pollfd fds[2] = {{m_fd, POLLOUT, 0}, {m_wake_fd, POLLIN, 0}};
    const int ready = ::poll(fds, m_wake_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      util::log().warn("serve: waiting for the client failed: {}", util::os_error_text(errno));
      return false;
    }
    if (ready > 0 && (fds[1].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const ssize_t n = ::read(m_wake_fd, &count, sizeof count);
    }
    if ((fds[0].revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL)) == 0) continue;
    const std::size_t left = frame.size() - off;
    const ssize_t n = m_socket ? ::send(m_fd, frame.data() + off, left, MSG_DONTWAIT | MSG_NOSIGNAL)
                               : ::write(m_fd, frame.data() + off, std::min(left, m_chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) {
      util::log().warn("serve: the client stopped reading: {}", util::os_error_text(n < 0 ? errno : EPIPE));
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace exthost::server

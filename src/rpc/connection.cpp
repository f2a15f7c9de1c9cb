#include "rpc/connection.hpp"

#include <array>
#include <cerrno>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <boost/json/object.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

#include "util/exception_text.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/frame_parser.hpp"
#include "wire/frame_writer.hpp"
#include "wire/json.hpp"
#include "wire/message.hpp"

namespace exthost::rpc {
namespace asio = boost::asio;

namespace {

// One read takes up to 64 KiB: a whole 64 KiB notification in few reads, while the reader's
// own buffer stays a fixed, small part of host memory.
constexpr std::size_t k_read_chunk = 64 * 1024;
// Frames handed to one gather-write at most (far below IOV_MAX).
constexpr std::size_t k_max_gathered_frames = 64;

std::string io_error_text(const boost::system::error_code& ec) {
  if (ec.category() == boost::system::system_category()) return util::os_error_text(ec.value());
  return ec.message();
}

}  // namespace

Connection::Connection(std::shared_ptr<Inbox> inbox, std::shared_ptr<process::Child> child,
                       std::shared_ptr<Lifecycle> lifecycle)
    : m_inbox(std::move(inbox)),
      m_child(std::move(child)),
      m_lifecycle(std::move(lifecycle)),
      m_room(m_inbox->executor()) {}

Connection::~Connection() {
  // The reader holds a reference while it runs, so it has ended by now.
}

std::shared_ptr<Connection> Connection::start(std::shared_ptr<Inbox> inbox, std::shared_ptr<process::Child> child,
                                              std::shared_ptr<Lifecycle> lifecycle) {
  std::shared_ptr<Connection> c(new Connection(inbox, std::move(child), std::move(lifecycle)));
  // Reset before the reader starts: a very fast EOF must never be erased (SPEC §1.1).
  inbox->reopen();
  // Non-blocking stdin: write() may try a frame in place and never stalls the I/O thread.
  const int stdin_fd = c->m_child->stdin_pipe().native_handle();
  ::fcntl(stdin_fd, F_SETFL, ::fcntl(stdin_fd, F_GETFL) | O_NONBLOCK);
  c->m_reader_running = true;
  asio::co_spawn(inbox->executor(), read_loop(c),
                 asio::bind_cancellation_slot(c->m_reader_cancel.slot(), TaskEnd{c, Task::reader}));
  inbox->set_current_connection(c);
  return c;
}

void Connection::stop() {
  if (m_stopped) return;
  m_stopped = true;
  m_lifecycle->invalidate();
  abort_reader();
  m_child->close_stdin();  // a write in progress ends; the writer fails what is queued
  m_room.notify();         // writers waiting for room fail now
}

void Connection::child_exited() {
  m_child_exited = true;
  boost::system::error_code ignored;
  if (m_reader_running) m_child->stdout_pipe().cancel(ignored);  // wakes a reader waiting on an idle pipe
}

namespace {
// Bytes the pipe holds now.
std::size_t readable_bytes(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 && n > 0 ? static_cast<std::size_t>(n) : 0;
}
}  // namespace

void Connection::abort_reader() {
  m_reader_aborted = true;
  if (m_reader_running) m_reader_cancel.emit(asio::cancellation_type::terminal);
}

void Connection::TaskEnd::operator()(std::exception_ptr error) const {
  if (!error) return;
  auto self = connection.lock();
  if (!self) return;  // nothing left to end
  static constexpr const char* names[] = {"reader", "writer", "inbound request task", "cancellation notice"};
  const std::string reason = "internal error in the " + std::string(names[static_cast<int>(task)]) + " of extension '" +
                             self->m_inbox->extension_id() + "': " + util::exception_text(error);
  util::log().error("{}", reason);
  if (task == Task::reader) self->m_reader_running = false;
  if (task == Task::writer) self->m_writing = false;
  self->fail_transport(reason);
  if (task == Task::writer && !self->m_write_queue.empty()) self->fail_queue();  // nobody else will
}

void Connection::end_transport(const std::string& reason, ErrorCause cause) {
  m_lifecycle->invalidate();
  if (m_stopped) return;  // stopped from outside: the stopper fails the pending calls
  m_inbox->fail_all_pending(reason, cause);
  m_inbox->drop_subscribers();
}

asio::awaitable<void> Connection::read_loop(std::shared_ptr<Connection> self) {
  const std::string& id = self->m_inbox->extension_id();
  wire::FrameParser parser(id);
  wire::JsonParser json;
  std::vector<char> buf(k_read_chunk);
  auto& counters = self->m_inbox->counters();
  const int stdout_fd = self->m_child->stdout_pipe().native_handle();
  for (;;) {
    // The child is gone and the pipe is empty: whoever still holds its write end is not the
    // extension, so this is its end of output.
    if (self->m_child_exited && !self->m_stopped && !self->m_reader_aborted && readable_bytes(stdout_fd) == 0) {
      self->end_transport(parser.finish() ? "transport error: " + *parser.finish() : "transport closed: EOF");
      break;
    }
    auto [ec, n] = co_await self->m_child->stdout_pipe().async_read_some(asio::buffer(buf),
                                                                          asio::as_tuple(asio::use_awaitable));
    if (ec == asio::error::operation_aborted && self->m_child_exited && !self->m_stopped && !self->m_reader_aborted) {
      continue;  // woken by child_exited(): drain, or end
    }
    if (self->m_stopped || ec == asio::error::operation_aborted) break;
    counters.bytes_in.fetch_add(n, std::memory_order_relaxed);
    std::string_view view(buf.data(), n);
    bool keep_reading = true;
    while (!view.empty() && keep_reading) {
      auto step = parser.feed(view);
      view.remove_prefix(step.consumed);
      if (step.error) {
        util::log().debug("extension '{}': Extension transport read error: {}", id, *step.error);
        self->end_transport("transport error: " + *step.error, ErrorCause::protocol);
        keep_reading = false;
        break;
      }
      if (!step.body) continue;
      counters.frames_in.fetch_add(1, std::memory_order_relaxed);
      auto parsed = json.parse(*step.body);
      if (!parsed) {
        const std::string err = "Parse frame error: " + parsed.error().message;
        util::log().debug("extension '{}': Extension transport read error: {}", id, err);
        self->end_transport("transport error: " + err, ErrorCause::protocol);
        keep_reading = false;
        break;
      }
      if (const auto& hook = self->m_inbox->reader_hook()) hook(parsed.value());
      keep_reading = co_await self->dispatch(std::move(parsed).value(), step.body->size());
    }
    if (!keep_reading || self->m_stopped) break;
    if (ec) {
      if (ec == asio::error::eof) {
        if (auto err = parser.finish()) {
          self->end_transport("transport error: " + *err);
        } else {
          util::log().debug("extension '{}': Extension stdout closed (EOF); failing pending requests", id);
          self->end_transport("transport closed: EOF");
        }
      } else {
        self->end_transport("transport error: Read header error: " + io_error_text(ec));
      }
      break;
    }
  }
  self->m_reader_running = false;
}

asio::awaitable<bool> Connection::dispatch(boost::json::value frame, std::size_t bytes) {
  auto message = wire::classify(std::move(frame));
  auto& counters = m_inbox->counters();
  if (auto* resp = std::get_if<wire::Response>(&message)) {
    m_inbox->complete(resp->id, std::move(resp->outcome));
    co_return true;
  }
  if (auto* note = std::get_if<wire::Notification>(&message)) {
    if (note->method == "$/progress") {  // for the runtime's deadlines, not for subscribers
      const auto* params = note->params.if_object();
      const auto* id = params ? params->if_contains("id") : nullptr;
      if (id && id->is_uint64()) {
        m_inbox->note_progress(id->get_uint64());
      } else if (id && id->is_int64() && id->get_int64() >= 0) {
        m_inbox->note_progress(static_cast<std::uint64_t>(id->get_int64()));
      }
      co_return true;
    }
    NotificationFrame nf{std::move(note->method), std::move(note->params), {}};
    co_return co_await m_inbox->fan_out(std::move(nf), bytes);
  }
  if (auto* req = std::get_if<wire::InboundRequest>(&message)) {
    counters.inbound_requests.fetch_add(1, std::memory_order_relaxed);
    if (!co_await m_inbox->acquire_inbound_slot()) co_return false;  // cancelled: the reader stops
    asio::co_spawn(m_inbox->executor(),
                   serve_inbound(m_inbox, std::move(req->id), std::move(req->method), std::move(req->params)),
                   TaskEnd{weak_from_this(), Task::inbound_request});
    co_return true;
  }
  const auto& discarded = std::get<wire::Discarded>(message);
  counters.discarded_frames.fetch_add(1, std::memory_order_relaxed);
  util::log().warn("extension '{}': {}", m_inbox->extension_id(), discarded.reason);
  co_return true;
}

asio::awaitable<void> Connection::serve_inbound(std::shared_ptr<Inbox> inbox, boost::json::value id,
                                                std::string method, boost::json::value params) {
  struct SlotGuard {  // the admission slot frees whatever way this ends
    Inbox& inbox;
    ~SlotGuard() { inbox.release_inbound_slot(); }
  } slot{*inbox};
  InboundReply reply;
  if (auto handler = inbox->inbound_handler()) {
    try {
      reply = co_await handler->handle(method, std::move(params));
    } catch (const std::exception& e) {
      reply = InboundReply::error(-32000, std::string("inbound request failed: ") + e.what());
    }
  } else {
    reply = InboundReply::error(-32601, "method not found: " + method);
  }
  std::string body = reply.result ? wire::encode_result_reply(id, *reply.result)
                                  : wire::encode_error_reply(id, reply.code, reply.message);
  auto connection = inbox->current_connection();
  if (!connection) {
    util::log().warn("extension '{}': No stdin available to reply to inbound request", inbox->extension_id());
    co_return;
  }
  auto written = co_await connection->write(wire::FrameWriter::frame(body));
  if (!written) {
    inbox->invalidate_lifecycle();
    util::log().warn("extension '{}': Failed to write inbound response: {}", inbox->extension_id(),
                     written.error().message);
  }
}

bool Connection::has_room(std::size_t bytes) const {
  return m_queued_bytes == 0 || m_queued_bytes + bytes <= k_write_queue_budget;
}

asio::awaitable<Result<void>> Connection::write(std::string frame, bool judges_reading) {
  auto self = shared_from_this();  // the caller's State may be torn down while we wait
  if (m_write_failure) co_return Error::extension(*m_write_failure).because(ErrorCause::transport);
  if (m_stopped) co_return Error::extension("Write error: " + util::os_error_text(EPIPE)).because(ErrorCause::transport);
  auto& counters = m_inbox->counters();
  if (!m_writing && m_write_queue.empty() && m_room_waiters == 0) {
    // Nothing queued: try the whole frame in place, which is the common case of a small
    // request to a child that reads. What does not fit is queued first, so the frame stays
    // whole and ahead of every later one.
    const ssize_t n = ::write(m_child->stdin_pipe().native_handle(), frame.data(), frame.size());
    if (n == static_cast<ssize_t>(frame.size())) {
      m_bytes_written += frame.size();
      counters.frames_out.fetch_add(1, std::memory_order_relaxed);
      counters.bytes_out.fetch_add(frame.size(), std::memory_order_relaxed);
      co_return Result<void>();
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      m_write_failure = "Write error: " + util::os_error_text(errno);
      co_return Error::extension(*m_write_failure).because(ErrorCause::transport);
    }
    if (n > 0) {
      m_bytes_written += static_cast<std::size_t>(n);
      counters.bytes_out.fetch_add(static_cast<std::size_t>(n), std::memory_order_relaxed);
      frame.erase(0, static_cast<std::size_t>(n));
    }
  }
  const std::uint64_t progress = m_bytes_written;
  if (m_room_waiters > 0 || !has_room(frame.size())) {
    // Behind those already waiting: whoever waits first is queued first. Leaving the line,
    // queued or not, wakes the next one to look again.
    struct InLine {
      Connection& c;
      explicit InLine(Connection& connection) : c(connection) { ++c.m_room_waiters; }
      ~InLine() {
        --c.m_room_waiters;
        c.m_room.notify();
      }
    } in_line{*this};
    do {
      co_await m_room.wait();
      if (m_write_failure) co_return Error::extension(*m_write_failure).because(ErrorCause::transport);
      if (m_stopped) co_return Error::extension("Write error: " + util::os_error_text(EPIPE)).because(ErrorCause::transport);
      auto cs = co_await asio::this_coro::cancellation_state;
      if (cs.cancelled() != asio::cancellation_type::none) co_return cancelled_write(progress, judges_reading);
    } while (!has_room(frame.size()));
  }
  auto ticket = std::make_shared<WriteTicket>(m_inbox->executor());
  m_queued_bytes += frame.size();
  m_write_queue.push_back(QueuedFrame{std::move(frame), ticket});
  if (!m_writing) {
    m_writing = true;
    asio::co_spawn(m_inbox->executor(), write_loop(self), TaskEnd{self, Task::writer});
  }
  while (!ticket->done) {
    co_await ticket->written.wait();
    auto cs = co_await asio::this_coro::cancellation_state;
    if (!ticket->done && cs.cancelled() != asio::cancellation_type::none) {
      co_return cancelled_write(progress, judges_reading);  // the frame is still written whole
    }
  }
  if (ticket->error) co_return Error::extension(*ticket->error).because(ErrorCause::transport);
  co_return Result<void>();
}

Error Connection::cancelled_write(std::uint64_t progress, bool judges_reading) {
  // The caller gave up (a call at its deadline) and the child has taken nothing of the
  // host's input since it began: it no longer reads, and whatever waits behind would wait
  // for its own deadline too.
  if (judges_reading && m_bytes_written == progress && !m_stopped && !m_write_failure) {
    const std::size_t unwritten = m_queued_bytes - m_front_written;
    const std::string reason = "Extension '" + m_inbox->extension_id() + "' stopped reading its input: " +
                               std::to_string(unwritten) + " bytes queued, none read before a call's deadline";
    util::log().warn("{}", reason);
    fail_transport(reason);
  }
  return Error::extension("Write error: cancelled").because(ErrorCause::cancelled);
}

void Connection::fail_transport(const std::string& reason) {
  if (m_stopped) return;
  if (!m_write_failure) m_write_failure = reason;
  end_transport(reason);
  stop();
}

void Connection::consume_written(std::size_t n) {
  auto& counters = m_inbox->counters();
  m_bytes_written += n;
  counters.bytes_out.fetch_add(n, std::memory_order_relaxed);
  bool freed = false;
  while (n > 0 && !m_write_queue.empty()) {
    auto& front = m_write_queue.front();
    const std::size_t rest = front.bytes.size() - m_front_written;
    if (n < rest) {
      m_front_written += n;
      break;
    }
    n -= rest;
    m_front_written = 0;
    m_queued_bytes -= front.bytes.size();
    front.ticket->done = true;
    front.ticket->written.notify();
    counters.frames_out.fetch_add(1, std::memory_order_relaxed);
    m_write_queue.pop_front();
    freed = true;
  }
  if (freed) m_room.notify();
}

void Connection::fail_queue() {
  const std::string error = m_write_failure ? *m_write_failure : "Write error: " + util::os_error_text(EPIPE);
  for (auto& f : m_write_queue) {
    f.ticket->error = error;
    f.ticket->done = true;
    f.ticket->written.notify();
  }
  m_write_queue.clear();
  m_front_written = 0;
  m_queued_bytes = 0;
  m_room.notify();
}

asio::awaitable<void> Connection::write_loop(std::shared_ptr<Connection> self) {
  std::vector<asio::const_buffer> buffers;
  while (!self->m_write_queue.empty() && !self->m_stopped && !self->m_write_failure) {
    buffers.clear();
    for (const auto& f : self->m_write_queue) {
      const std::size_t skip = buffers.empty() ? self->m_front_written : 0;
      buffers.push_back(asio::buffer(f.bytes.data() + skip, f.bytes.size() - skip));
      if (buffers.size() == k_max_gathered_frames) break;
    }
    auto [ec, n] = co_await self->m_child->stdin_pipe().async_write_some(buffers, asio::as_tuple(asio::use_awaitable));
    self->consume_written(n);
    if (ec && !self->m_write_failure) self->m_write_failure = "Write error: " + io_error_text(ec);
  }
  if (!self->m_write_queue.empty()) self->fail_queue();  // the writer failed, or was stopped
  self->m_writing = false;
}

asio::awaitable<Result<boost::json::value>> Connection::call(std::string_view method, boost::json::value params,
                                                             std::uint64_t id) {
  auto self = shared_from_this();
  auto registered = m_inbox->register_pending(id);
  if (!registered) co_return std::move(registered).error();
  auto pending = std::move(registered).value();

  auto written = co_await write(wire::FrameWriter::frame(wire::encode_request(method, params, id)),
                                method != "hook.handle");
  if (!written) {
    m_lifecycle->invalidate();
    m_inbox->remove_pending(id);
    // The request never reached the child whole: nothing of it can have run.
    Error e = std::move(written).error();
    if (e.cause != ErrorCause::cancelled) e.cause = ErrorCause::not_running;
    co_return e;
  }
  while (!pending->outcome) {
    co_await pending->ready.wait();
    if (pending->outcome) break;
    auto cs = co_await asio::this_coro::cancellation_state;
    if (cs.cancelled() != asio::cancellation_type::none) {
      m_inbox->remove_pending(id);  // a late reply is now an unknown id: dropped and counted
      // This coroutine is being cancelled and may not wait again: the notice goes on its own.
      if (m_inbox->cancellation()) {
        asio::co_spawn(m_inbox->executor(), send_cancel(self, id), TaskEnd{self, Task::cancel_notice});
      }
      co_return Error::extension("request cancelled").because(ErrorCause::cancelled);
    }
  }
  co_return std::move(*pending->outcome);
}

asio::awaitable<void> Connection::send_cancel(std::shared_ptr<Connection> self, std::uint64_t id) {
  boost::json::object params;
  params["id"] = id;
  auto sent = co_await self->notify("$/cancelRequest", params);
  if (sent) self->m_inbox->counters().cancel_notifications.fetch_add(1, std::memory_order_relaxed);
}

asio::awaitable<Result<void>> Connection::notify(std::string_view method, const boost::json::value& params) {
  co_return co_await write(wire::FrameWriter::frame(wire::encode_notification(method, params)));
}

}  // namespace exthost::rpc

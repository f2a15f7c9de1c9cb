// rpc/connection.hpp — the JSON-RPC connection to one child: one reader, one writer.
//
// Promises:
// - One reader coroutine per child reads stdout through a FrameParser and dispatches each
//   message (SPEC §1.4): responses complete their pending call, notifications are fanned out
//   (awaited, so a slow subscriber backpressures the child), inbound requests are served on
//   a task of their own and answered with their id verbatim.
// - One writer per child: frames are queued whole and written in order, gathered into one
//   write when several are ready; frames never interleave. The queue holds at most
//   k_write_queue_budget bytes: past it a writer (call, notification or inbound reply)
//   waits for room, first come first in. A writer cancelled (a call at its deadline) while
//   the child took nothing of the host's input for the whole of its wait ends the transport:
//   "Extension '<id>' stopped reading its input: <n> bytes queued, …".
// - When the reader ends (EOF or error) it invalidates its own lifecycle, fails every
//   pending call ("transport closed: EOF" / "transport error: …") and ends every
//   subscription. When the connection is stopped from outside, the reader ends silently:
//   whoever stopped it chooses what pending calls are told.
// - A task of the connection's own (reader, writer, inbound request, cancellation notice)
//   that throws is an internal error: it is logged and ends the transport, and pending calls
//   fail with "internal error in the <task> of extension '<id>': <what>".
//
// Threading: I/O thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "exthost/result.hpp"
#include "process/child.hpp"
#include "rpc/event.hpp"
#include "rpc/inbox.hpp"
#include "rpc/lifecycle.hpp"

namespace exthost::rpc {

// Bytes of frames one connection may hold for its child's stdin. A frame larger than this is
// queued when nothing else is (a call's input may exceed it).
inline constexpr std::size_t k_write_queue_budget = 4u << 20;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Starts the reader on `child`'s stdout and makes this the inbox's reply connection.
  static std::shared_ptr<Connection> start(std::shared_ptr<Inbox> inbox, std::shared_ptr<process::Child> child,
                                           std::shared_ptr<Lifecycle> lifecycle);
  ~Connection();

  // Queues one whole frame, waiting for room in the budget first, and waits until it is
  // written. Once queued, the frame is written even if the caller is cancelled meanwhile (a
  // frame is never cut). Errors: "Write error: <os error>", or why the transport ended.
  // `judges_reading`: whether this writer, cancelled while the child read nothing, ends the
  // transport (false for a hook: its deadline is shorter than a running tool's, and a
  // sequential child busy with that tool does not read meanwhile).
  boost::asio::awaitable<Result<void>> write(std::string frame, bool judges_reading = true);

  // One request/response exchange (SPEC §1.6): registers the id before writing, writes,
  // waits for the reply. A request refused at registration or not written whole fails with
  // cause `not_running` (it never reached the child); once written, a transport failure has
  // cause `transport`. Cancellation: the pending entry is removed, a late reply is
  // dropped and counted, and an extension that declared the cancellation capability is
  // sent "$/cancelRequest" {"id": id}; the child is not otherwise touched.
  boost::asio::awaitable<Result<boost::json::value>> call(std::string_view method, boost::json::value params,
                                                          std::uint64_t id);

  // Sends a notification (no reply expected).
  boost::asio::awaitable<Result<void>> notify(std::string_view method, const boost::json::value& params);

  // Stops the reader and closes stdin. Pending calls are left for the caller to fail.
  void stop();
  // The child process has been reaped. Its stdout may stay open in descendants that
  // inherited it, so EOF may never come: the reader drains what the pipe still holds, then
  // ends the transport as at EOF ("transport closed: EOF").
  void child_exited();
  // Stops only the reader: no EOF will be observed and pending calls stay pending. For tests
  // of lifecycle observation while nothing reads.
  void abort_reader();

  const std::shared_ptr<process::Child>& child() const { return m_child; }
  const std::shared_ptr<Lifecycle>& lifecycle() const { return m_lifecycle; }
  bool reader_running() const { return m_reader_running; }
  // Bytes of the frames queued and not yet wholly written.
  std::size_t queued_bytes() const { return m_queued_bytes; }

 private:
  struct WriteTicket {
    explicit WriteTicket(const boost::asio::any_io_executor& ex) : written(ex) {}
    Event written;
    bool done = false;
    std::optional<std::string> error;
  };
  struct QueuedFrame {
    std::string bytes;
    std::shared_ptr<WriteTicket> ticket;
  };

  enum class Task { reader, writer, inbound_request, cancel_notice };
  // The completion of one of those tasks: an exception ends the transport.
  struct TaskEnd {
    std::weak_ptr<Connection> connection;
    Task task;
    void operator()(std::exception_ptr error) const;
  };

  Connection(std::shared_ptr<Inbox> inbox, std::shared_ptr<process::Child> child, std::shared_ptr<Lifecycle> lifecycle);
  static boost::asio::awaitable<void> read_loop(std::shared_ptr<Connection> self);
  static boost::asio::awaitable<void> write_loop(std::shared_ptr<Connection> self);
  static boost::asio::awaitable<void> send_cancel(std::shared_ptr<Connection> self, std::uint64_t id);
  static boost::asio::awaitable<void> serve_inbound(std::shared_ptr<Inbox> inbox, boost::json::value id,
                                                    std::string method, boost::json::value params);
  // `bytes`: the frame body's size. False: stop reading.
  boost::asio::awaitable<bool> dispatch(boost::json::value frame, std::size_t bytes);
  // `cause`: transport when the child's output ended or failed, protocol when it wrote
  // something that is not a frame of JSON (the child may still be running).
  void end_transport(const std::string& reason, ErrorCause cause = ErrorCause::transport);
  // Ends the transport from the host's side: pending calls and writers fail with `reason`,
  // the reader stops and stdin is closed. The caller logs.
  void fail_transport(const std::string& reason);
  bool has_room(std::size_t bytes) const;
  // The pipe took `n` more bytes: completes the frames they finish.
  void consume_written(std::size_t n);
  // Fails every queued frame (none may be in a write) with the connection's failure.
  void fail_queue();
  // A writer's answer to its cancellation; `progress` is m_bytes_written when it started.
  Error cancelled_write(std::uint64_t progress, bool judges_reading);

  std::shared_ptr<Inbox> m_inbox;
  std::shared_ptr<process::Child> m_child;
  std::shared_ptr<Lifecycle> m_lifecycle;  // this child's own record
  boost::asio::cancellation_signal m_reader_cancel;
  bool m_reader_running = false;
  bool m_stopped = false;
  bool m_child_exited = false;
  bool m_reader_aborted = false;
  bool m_writing = false;
  std::optional<std::string> m_write_failure;  // every later write fails with this
  std::deque<QueuedFrame> m_write_queue;
  std::size_t m_front_written = 0;  // bytes of the first queued frame already written
  std::size_t m_queued_bytes = 0;   // sizes of the queued frames
  std::uint64_t m_bytes_written = 0;  // every byte the pipe took: the child's progress
  std::size_t m_room_waiters = 0;
  Event m_room;  // notified when frames leave the queue or the connection ends
};

}  // namespace exthost::rpc

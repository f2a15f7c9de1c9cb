// rpc/inbox.hpp — one extension's mailbox, shared by every child it runs (SPEC §1.5–§1.7).
//
// The Inbox outlives restarts: it holds the pending calls (by numeric id), the notification
// subscribers, the lifecycle slot and generation counter, the inbound-request handler and
// the connection that inbound replies go to. Registration follows the reference's
// closed-flag protocol: a call is refused once the reader has ended, and every pending
// call is failed exactly once with the reason of whoever ended the transport.
//
// Threading: everything runs on the I/O thread except snapshot(), which may be called from
// any thread and never blocks (it try-locks the lifecycle slot).
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "exthost/health.hpp"
#include "exthost/result.hpp"
#include "rpc/byte_budget.hpp"
#include "rpc/event.hpp"
#include "rpc/lifecycle.hpp"
#include "rpc/notification_queue.hpp"

namespace exthost::rpc {

class Connection;

// Inbound requests served at once per extension. Each holds a task and its reply; past
// this many the reader waits (so the child's pipe fills) instead of spawning without bound.
inline constexpr std::size_t k_max_inbound_in_flight = 16;

// The answer to an inbound request: a result, or a JSON-RPC error code and message.
struct InboundReply {
  std::optional<boost::json::value> result;
  int code = 0;
  std::string message;

  static InboundReply ok(boost::json::value v) { return {std::move(v), 0, {}}; }
  static InboundReply error(int code, std::string message) { return {std::nullopt, code, std::move(message)}; }
};

// Serves requests an extension sends to the host (memory.*, config.*). Implemented above
// the runtime; called on the I/O thread on a task of its own, never on the reader, so a
// slow answer delays only its own reply.
class InboundHandler {
 public:
  virtual ~InboundHandler() = default;
  virtual boost::asio::awaitable<InboundReply> handle(std::string method, boost::json::value params) = 0;
};

// Counters of one extension's traffic (SPEC A11). Read from any thread.
struct TrafficCounters {
  std::atomic<std::uint64_t> frames_in{0};
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> frames_out{0};
  std::atomic<std::uint64_t> bytes_out{0};
  std::atomic<std::uint64_t> notifications_delivered{0};
  std::atomic<std::uint64_t> notifications_dropped{0};  // no subscriber
  std::atomic<std::uint64_t> late_replies{0};           // replies to unknown or abandoned ids
  std::atomic<std::uint64_t> discarded_frames{0};       // frames that fit no message kind
  std::atomic<std::uint64_t> inbound_requests{0};
  std::atomic<std::uint64_t> inbound_in_flight_peak{0};  // most inbound requests served at once
  std::atomic<std::uint64_t> cancel_notifications{0};   // $/cancelRequest sent
};

class Inbox;

// A live notification subscription. Destroying it unsubscribes (idempotent) and drops
// anything still buffered for it.
class Subscription {
 public:
  Subscription() = default;
  Subscription(std::weak_ptr<Inbox> inbox, std::uint64_t id, std::shared_ptr<NotificationQueue> queue)
      : m_inbox(std::move(inbox)), m_id(id), m_queue(std::move(queue)) {}
  // A subscription that has already ended: its queue yields nothing.
  static Subscription ended(const boost::asio::any_io_executor& ex) {
    auto queue = std::make_shared<NotificationQueue>(ex);
    queue->close();
    return Subscription({}, 0, std::move(queue));
  }
  Subscription(Subscription&&) noexcept = default;
  Subscription& operator=(Subscription&&) noexcept;
  ~Subscription();

  std::uint64_t id() const { return m_id; }
  NotificationQueue& queue() { return *m_queue; }
  // Stops new frames; what is buffered can still be drained, then the queue ends.
  void unsubscribe();

 private:
  std::weak_ptr<Inbox> m_inbox;
  std::uint64_t m_id = 0;
  std::shared_ptr<NotificationQueue> m_queue;
};

class Inbox : public std::enable_shared_from_this<Inbox> {
 public:
  struct PendingCall {
    explicit PendingCall(const boost::asio::any_io_executor& ex) : ready(ex) {}
    Event ready;
    std::optional<Result<boost::json::value>> outcome;
  };

  Inbox(boost::asio::any_io_executor ex, std::string extension_id);

  const std::string& extension_id() const { return m_extension_id; }
  const boost::asio::any_io_executor& executor() const { return m_executor; }
  TrafficCounters& counters() { return m_counters; }

  // --- lifecycle slot -------------------------------------------------------------
  // Allocates the next generation (2, 4, 6, …; fails closed on exhaustion), invalidates the
  // previous lifecycle and publishes the new one.
  Result<std::shared_ptr<Lifecycle>> install_lifecycle(std::shared_ptr<process::ExitProbe> probe);
  void invalidate_lifecycle();
  std::shared_ptr<Lifecycle> current_lifecycle();
  // Any thread, never blocks: nullopt when the slot or the child probe is contended, or
  // when no child was ever spawned.
  std::optional<exthost::Lifecycle> snapshot(bool recovered);
  std::mutex& lifecycle_slot_mutex() { return m_lifecycle_mutex; }  // tests contend it
  // For tests of exhaustion: the next generation to allocate.
  void set_next_generation(std::uint64_t g) { m_next_generation = g; }

  // --- pending calls ----------------------------------------------------------------
  bool closed() const { return m_closed; }
  void reopen() { m_closed = false; }  // a new child's reader is about to start
  // Registers a call; refused when closed (SPEC §1.6 steps 1–3).
  Result<std::shared_ptr<PendingCall>> register_pending(std::uint64_t id);
  void remove_pending(std::uint64_t id) { m_pending.erase(id); }
  // Delivers a response; a reply nobody waits for is counted and dropped.
  void complete(std::uint64_t id, Result<boost::json::value> outcome);
  // Invalidates the lifecycle, closes the inbox and fails every pending call with `reason`.
  // `cause`: transport, or stopped when the host itself ended the extension.
  void fail_all_pending(const std::string& reason, ErrorCause cause = ErrorCause::transport);
  std::size_t pending_count() const { return m_pending.size(); }
  // The ids of the calls waiting for an answer, in no particular order.
  std::vector<std::uint64_t> pending_ids() const {
    std::vector<std::uint64_t> ids;
    for (const auto& [id, call] : m_pending) ids.push_back(id);
    return ids;
  }

  // --- notification subscribers -------------------------------------------------------
  Subscription subscribe();
  void unsubscribe(std::uint64_t id);
  // Ends every subscription (buffered frames stay drainable) and forgets them.
  void drop_subscribers();
  std::size_t subscriber_count() const { return m_subscribers.size(); }
  // Awaited fan-out: for each subscriber in turn, waits for the byte budget (`bytes`, the
  // frame's body size, per copy), then for room in its queue. False if cancelled.
  boost::asio::awaitable<bool> fan_out(NotificationFrame frame, std::size_t bytes);
  // The extension's parked-bytes budget, its level and high-water marks.
  const ByteBudget& budget() const { return *m_budget; }

  // --- cancellation (SPEC A3) ---------------------------------------------------------
  // Whether the extension declared capabilities.cancellation: then every request the host
  // abandons is followed by a "$/cancelRequest" notification naming its id.
  void set_cancellation(bool enabled) { m_cancellation = enabled; }
  bool cancellation() const { return m_cancellation; }

  // --- progress ---------------------------------------------------------------------
  // "$/progress" {"id": <a request id of ours>}: the extension says that request is still
  // being worked on. The observer (the runtime) restarts that request's idle deadline.
  using ProgressObserver = std::function<void(std::uint64_t id)>;
  void set_progress_observer(ProgressObserver observer) { m_progress = std::move(observer); }
  void note_progress(std::uint64_t id) const {
    if (m_progress) m_progress(id);
  }

  // --- inbound requests -------------------------------------------------------------
  void set_inbound_handler(std::shared_ptr<InboundHandler> handler) { m_inbound = std::move(handler); }
  std::shared_ptr<InboundHandler> inbound_handler() const { return m_inbound; }
  void set_current_connection(std::weak_ptr<Connection> c) { m_current_connection = std::move(c); }
  // Admission of inbound requests (the reader waits for a slot; a finished one frees it).
  boost::asio::awaitable<bool> acquire_inbound_slot();
  void release_inbound_slot();
  std::size_t inbound_in_flight() const { return m_inbound_in_flight; }
  std::shared_ptr<Connection> current_connection() const { return m_current_connection.lock(); }

  // --- fault injection ---------------------------------------------------------------
  // Runs on the reader with each message before it is dispatched, so a test can make the
  // reader fail. Unset outside tests.
  using ReaderHook = std::function<void(const boost::json::value&)>;
  void set_reader_hook(ReaderHook hook) { m_reader_hook = std::move(hook); }
  const ReaderHook& reader_hook() const { return m_reader_hook; }

 private:
  boost::asio::any_io_executor m_executor;
  std::string m_extension_id;
  TrafficCounters m_counters;

  std::mutex m_lifecycle_mutex;            // guards m_lifecycle only; never held across I/O
  std::shared_ptr<Lifecycle> m_lifecycle;  // the latest child's record, or null
  std::uint64_t m_next_generation = 2;

  bool m_closed = false;
  std::unordered_map<std::uint64_t, std::shared_ptr<PendingCall>> m_pending;

  std::shared_ptr<ByteBudget> m_budget;
  std::uint64_t m_next_subscriber = 0;
  std::vector<std::pair<std::uint64_t, std::shared_ptr<NotificationQueue>>> m_subscribers;

  bool m_cancellation = false;
  ProgressObserver m_progress;
  std::size_t m_inbound_in_flight = 0;
  Event m_inbound_slot_freed{m_executor};
  std::shared_ptr<InboundHandler> m_inbound;
  std::weak_ptr<Connection> m_current_connection;
  ReaderHook m_reader_hook;
};

}  // namespace exthost::rpc

// runtime/invoke_output.hpp — bounded, budgeted collection of command.invoke output
// (SPEC §7, seed 000).
//
// Threat: a command streams command.output / task.* while its command.invoke is pending;
// nothing else bounds the aggregate bytes. The forwarder sends into a bounded, metered
// InvokeEventSink; an eagerly concurrent InvokeOutputCollector consumes unconditionally and
// applies the budgets at production time:
// - head retention: text/system/error may be cut UTF-8-safely to fit, tables and task
//   events are kept or dropped whole, everything past the budget is dropped whole;
// - a small control reserve keeps the first `done` marker and the task.done of every
//   retained task.start, so retained output never ends dangling;
// - exact counters, with the identities of SPEC §7.5.
// The collector core is plain (no I/O); the sink and collect() move events between
// coroutines on the I/O thread. Dropping the sink ends the stream: collect() returns.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <functional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "protocol/command_output.hpp"
#include "protocol/task_event.hpp"
#include "rpc/bounded_queue.hpp"

namespace exthost::runtime {

// Command output is chat-transcript text: 256 KiB covers legitimate commands and caps floods.
inline constexpr std::size_t k_invoke_retained_byte_budget = 256 * 1024;
// Guards against floods of tiny events (task.start storms) that stay under the byte budget.
inline constexpr std::size_t k_invoke_retained_event_budget = 1024;
// Bytes only post-budget control events may use (one done, one task.done per retained task).
inline constexpr std::size_t k_invoke_control_reserve_bytes = 16 * 1024;
// Producer → collector hand-off: small on purpose, the collector drains eagerly.
inline constexpr std::size_t k_invoke_event_queue_capacity = 8;

// What a command.invoke caller receives: output for its request, or any task event.
using InvokeCommandEvent = std::variant<protocol::CommandOutputEvent, protocol::TaskEvent>;

// The payload weight of an event: the UTF-8 bytes of every producer-controlled string.
std::size_t event_payload_bytes(const InvokeCommandEvent& e);

struct InvokeOutputBudget {
  std::size_t max_retained_payload_bytes = k_invoke_retained_byte_budget;
  std::size_t max_retained_events = k_invoke_retained_event_budget;
  std::size_t control_reserve_bytes = k_invoke_control_reserve_bytes;
  // No budget at all: a test oracle, never a production setting.
  static InvokeOutputBudget unlimited() { return {SIZE_MAX, SIZE_MAX, 0}; }
};

struct InvokeOutputCounters {
  std::uint64_t produced_events = 0;
  std::uint64_t produced_payload_bytes = 0;
  std::uint64_t consumed_events = 0;
  std::uint64_t consumed_payload_bytes = 0;
  std::uint64_t retained_events = 0;
  std::uint64_t retained_payload_bytes = 0;
  std::uint64_t truncated_events = 0;
  std::uint64_t truncated_payload_bytes = 0;
  std::uint64_t dropped_events = 0;
  std::uint64_t dropped_payload_bytes = 0;
  std::uint64_t dropped_error_events = 0;
  bool saw_done = false;
};

struct InvokeOutputNotice {
  std::string message;
  bool severity_error = false;  // some dropped events were errors
};

struct InvokeOutputReport {
  std::vector<InvokeCommandEvent> events;
  InvokeOutputCounters counters;
  bool is_limited() const { return counters.dropped_events > 0 || counters.truncated_events > 0; }
  // "command output limited by invocation budget: produced … (including N error events)".
  std::optional<InvokeOutputNotice> limit_notice() const;
};

// The consuming side's rules (SPEC §7.4), without any I/O.
// Sees each event the collector keeps, at the moment it keeps it (live display).
using RetainedEventObserver = std::function<void(const InvokeCommandEvent&)>;
// Awaited by the collector after each event it takes in: a live consumer that is behind
// holds the collector back, and through the channel the extension.
using CollectorPacer = std::function<boost::asio::awaitable<void>()>;

class InvokeOutputCollector {
 public:
  explicit InvokeOutputCollector(InvokeOutputBudget budget = {}) : m_budget(budget) {}
  void observe(RetainedEventObserver observer) { m_observer = std::move(observer); }
  void ingest(InvokeCommandEvent event);
  // The retained events and counters; `produced_*` come from the sink's meter.
  InvokeOutputReport finish(std::uint64_t produced_events, std::uint64_t produced_payload_bytes) &&;
  const InvokeOutputCounters& counters() const { return m_report.counters; }

 private:
  void retain(InvokeCommandEvent event, std::size_t kept, bool control);
  void drop(const InvokeCommandEvent& event, std::size_t weight);

  InvokeOutputBudget m_budget;
  RetainedEventObserver m_observer;  // may be empty
  InvokeOutputReport m_report;
  std::size_t m_ordinary_bytes = 0;
  std::size_t m_control_bytes = 0;
  std::set<std::string> m_started_ids;
  std::set<std::string> m_done_ids;
};

// The producer→collector pair of one invocation.
class InvokeEventChannel {
 public:
  InvokeEventChannel(const boost::asio::any_io_executor& ex, InvokeOutputBudget budget = {});

  // Producer: counts the event as produced, then waits for room. False once the collector is
  // gone (the event still counts as produced): stop forwarding, let the call finish.
  boost::asio::awaitable<bool> send(InvokeCommandEvent event);
  // Producer: no more events (the invocation ended, failed or was cancelled).
  void close() { m_queue.close(); }
  bool is_closed() const { return m_queue.abandoned(); }

  // Consumer: ingests until the producer closes, then reports. If the consumer is cancelled
  // it abandons the queue, which releases a producer waiting for room.
  boost::asio::awaitable<InvokeOutputReport> collect();
  // Consumer gone without collecting (tests of a closed collector).
  void abandon() { m_queue.abandon(); }
  // Each retained event goes to `observer` too, as it is retained (before collect() ends).
  void observe(RetainedEventObserver observer) { m_collector.observe(std::move(observer)); }
  // collect() awaits `pacer` after each event (none: it drains eagerly).
  void pace(CollectorPacer pacer) { m_pacer = std::move(pacer); }

 private:
  rpc::BoundedQueue<InvokeCommandEvent> m_queue;
  InvokeOutputCollector m_collector;
  CollectorPacer m_pacer;
  std::uint64_t m_produced_events = 0;
  std::uint64_t m_produced_bytes = 0;
};

}  // namespace exthost::runtime

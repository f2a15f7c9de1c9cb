#include "runtime/invoke_output.hpp"

#include "util/text.hpp"

namespace exthost::runtime {
namespace {

using namespace protocol;

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

bool is_done(const InvokeCommandEvent& e) {
  const auto* out = std::get_if<CommandOutputEvent>(&e);
  return out != nullptr && std::holds_alternative<command_output::Done>(*out);
}

const task_event::Done* as_task_done(const InvokeCommandEvent& e) {
  const auto* task = std::get_if<TaskEvent>(&e);
  return task == nullptr ? nullptr : std::get_if<task_event::Done>(task);
}

// The content of a text, system or error event: the only kinds that may be cut.
std::string* truncatable_content(InvokeCommandEvent& e) {
  auto* out = std::get_if<CommandOutputEvent>(&e);
  if (out == nullptr) return nullptr;
  if (auto* t = std::get_if<command_output::Text>(out)) return &t->content;
  if (auto* s = std::get_if<command_output::System>(out)) return &s->content;
  if (auto* x = std::get_if<command_output::Error>(out)) return &x->content;
  return nullptr;
}

}  // namespace

std::size_t event_payload_bytes(const InvokeCommandEvent& e) {
  return std::visit(
      overloaded{
          [](const CommandOutputEvent& out) -> std::size_t {
            return std::visit(overloaded{[](const command_output::Text& t) { return t.content.size(); },
                                         [](const command_output::System& s) { return s.content.size(); },
                                         [](const command_output::Error& x) { return x.content.size(); },
                                         [](const command_output::Table& t) {
                                           std::size_t n = 0;
                                           for (const auto& h : t.headers) n += h.size();
                                           for (const auto& r : t.rows) {
                                             for (const auto& c : r) n += c.size();
                                           }
                                           return n;
                                         },
                                         [](const command_output::Done&) -> std::size_t { return 0; }},
                              out);
          },
          [](const TaskEvent& task) -> std::size_t {
            return std::visit(
                overloaded{[](const task_event::Start& s) { return s.id.size() + s.label.size(); },
                           [](const task_event::Update& u) { return u.id.size() + (u.message ? u.message->size() : 0); },
                           [](const task_event::Log& l) { return l.id.size() + l.line.size(); },
                           [](const task_event::Done& d) { return d.id.size() + (d.error ? d.error->size() : 0); }},
                task);
          }},
      e);
}

void InvokeOutputCollector::retain(InvokeCommandEvent event, std::size_t kept, bool control) {
  (control ? m_control_bytes : m_ordinary_bytes) += kept;
  m_report.counters.retained_events += 1;
  m_report.counters.retained_payload_bytes += kept;
  if (m_observer) m_observer(event);
  m_report.events.push_back(std::move(event));
}

void InvokeOutputCollector::drop(const InvokeCommandEvent& event, std::size_t weight) {
  m_report.counters.dropped_events += 1;
  m_report.counters.dropped_payload_bytes += weight;
  if (const auto* out = std::get_if<CommandOutputEvent>(&event); out && std::holds_alternative<command_output::Error>(*out)) {
    m_report.counters.dropped_error_events += 1;
  }
}

void InvokeOutputCollector::ingest(InvokeCommandEvent event) {
  auto& c = m_report.counters;
  const std::size_t w = event_payload_bytes(event);
  c.consumed_events += 1;
  c.consumed_payload_bytes += w;

  if (is_done(event)) {
    if (c.saw_done) {
      drop(event, 0);
    } else {
      c.saw_done = true;
      retain(std::move(event), 0, true);
    }
    return;
  }
  if (const auto* done = as_task_done(event)) {
    const std::string id = done->id;
    const bool fits = c.retained_events < m_budget.max_retained_events && m_ordinary_bytes + w <= m_budget.max_retained_payload_bytes;
    if (fits && !m_done_ids.count(id)) {
      m_done_ids.insert(id);
      retain(std::move(event), w, false);
    } else if (!m_done_ids.count(id) && m_started_ids.count(id) && m_control_bytes + w <= m_budget.control_reserve_bytes) {
      m_done_ids.insert(id);
      retain(std::move(event), w, true);
    } else {
      drop(event, w);
    }
    return;
  }
  if (c.retained_events >= m_budget.max_retained_events) {
    drop(event, w);
    return;
  }
  const std::size_t remaining =
      m_ordinary_bytes >= m_budget.max_retained_payload_bytes ? 0 : m_budget.max_retained_payload_bytes - m_ordinary_bytes;
  if (w <= remaining) {
    if (const auto* task = std::get_if<TaskEvent>(&event)) {
      if (const auto* start = std::get_if<task_event::Start>(task)) m_started_ids.insert(start->id);
    }
    retain(std::move(event), w, false);
    return;
  }
  if (remaining > 0) {
    if (std::string* content = truncatable_content(event)) {
      const std::size_t kept = util::utf8_prefix(*content, remaining).size();
      content->resize(kept);
      c.truncated_events += 1;
      c.truncated_payload_bytes += w - kept;
      retain(std::move(event), kept, false);
      return;
    }
  }
  drop(event, w);
}

InvokeOutputReport InvokeOutputCollector::finish(std::uint64_t produced_events, std::uint64_t produced_payload_bytes) && {
  m_report.counters.produced_events = produced_events;
  m_report.counters.produced_payload_bytes = produced_payload_bytes;
  return std::move(m_report);
}

std::optional<InvokeOutputNotice> InvokeOutputReport::limit_notice() const {
  if (!is_limited()) return std::nullopt;
  const auto& c = counters;
  std::string m = "command output limited by invocation budget: produced " + std::to_string(c.produced_payload_bytes) +
                  " bytes in " + std::to_string(c.produced_events) + " events; retained " +
                  std::to_string(c.retained_payload_bytes) + " bytes in " + std::to_string(c.retained_events) +
                  " events; truncated " + std::to_string(c.truncated_payload_bytes) + " bytes across " +
                  std::to_string(c.truncated_events) + " events; dropped " + std::to_string(c.dropped_payload_bytes) +
                  " bytes across " + std::to_string(c.dropped_events) + " events";
  if (c.dropped_error_events > 0) m += " (including " + std::to_string(c.dropped_error_events) + " error events)";
  return InvokeOutputNotice{std::move(m), c.dropped_error_events > 0};
}

InvokeEventChannel::InvokeEventChannel(const boost::asio::any_io_executor& ex, InvokeOutputBudget budget)
    : m_queue(ex, k_invoke_event_queue_capacity), m_collector(budget) {}

boost::asio::awaitable<bool> InvokeEventChannel::send(InvokeCommandEvent event) {
  m_produced_events += 1;  // counted first: a send into a gone collector still produced it
  m_produced_bytes += event_payload_bytes(event);
  co_return co_await m_queue.push(std::move(event));
}

boost::asio::awaitable<InvokeOutputReport> InvokeEventChannel::collect() {
  for (;;) {
    auto event = co_await m_queue.pop();
    if (!event) break;
    m_collector.ingest(std::move(*event));
    if (m_pacer) co_await m_pacer();
  }
  auto cs = co_await boost::asio::this_coro::cancellation_state;
  if (cs.cancelled() != boost::asio::cancellation_type::none) m_queue.abandon();
  co_return std::move(m_collector).finish(m_produced_events, m_produced_bytes);
}

}  // namespace exthost::runtime

#include "host/hook_bus.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "rpc/event.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"
#include "wire/message.hpp"

namespace exthost::host {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using protocol::HookKind;
using protocol::HookResult;
namespace hr = protocol::hook_result;

namespace {

bool trace_enabled() {
  for (const char* name : {"EXTHOST_EXTENSIONS_TRACE", "SYNAPS_EXTENSIONS_TRACE"}) {
    if (const char* v = std::getenv(name)) return util::is_truthy(v);
  }
  return false;
}

bool allows(HookKind kind, const HookResult& r) {
  const auto name = protocol::action_name(r);
  const auto names = allowed_action_names(kind);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The handler's answer as a coroutine of the bus's own, holding what it needs.
asio::awaitable<Result<HookResult>> answer_of(std::shared_ptr<runtime::ExtensionHandler> handler,
                                              std::shared_ptr<const protocol::HookEvent> event,
                                              std::shared_ptr<bool> written) {
  co_return co_await handler->handle_tracked(*event, std::move(written));
}

std::string described(const std::string& extension_id, const HookSubscription& sub) {
  std::string text = "hook " + std::string(protocol::to_string(sub.kind));
  if (sub.tool) text += " (tool '" + *sub.tool + "')";
  return text + " of extension '" + extension_id + "'";
}

// "5 s" for whole seconds, else "1500 ms".
std::string deadline_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

// An extension's text inside a reason: at most k_max_hook_failure_text bytes.
std::string bounded(std::string_view text) {
  if (text.size() <= k_max_hook_failure_text) return std::string(text);
  return std::string(util::utf8_prefix(text, k_max_hook_failure_text)) + "\xE2\x80\xA6";
}

// Why an ask gave no answer, as a fail-closed reason continues "hook of extension 'x' …".
std::string failure_text(const std::optional<Result<HookResult>>& answer, bool timed_out,
                         std::chrono::milliseconds deadline) {
  if (timed_out) return "did not answer within " + deadline_text(deadline);
  if (!answer || answer->ok()) return "failed: its ask ended without an answer";
  const Error& e = answer->error();
  switch (e.cause) {
    case ErrorCause::timeout: return "did not answer within " + deadline_text(deadline);
    case ErrorCause::application: {
      std::string_view message = e.message;
      if (message.starts_with(wire::k_application_error_prefix)) message.remove_prefix(wire::k_application_error_prefix.size());
      return "answered an error: " + bounded(message);
    }
    case ErrorCause::protocol: return "answered an invalid result";
    case ErrorCause::not_running:
    case ErrorCause::stopped:
    case ErrorCause::restart_exhausted:
    case ErrorCause::spawn_failed: return "is not running";
    default: return "failed: " + bounded(e.message);
  }
}

std::string fail_closed_reason(const std::string& extension_id, const std::string& why) {
  return "blocked: hook of extension '" + extension_id + "' " + why + " (fail-closed)";
}

}  // namespace

// Shared by an emit and its asks: each ask's end, and the signals that cancel them.
struct HookBus::Gather {
  Gather(const asio::any_io_executor& ex, std::size_t n) : replies(n), cancelled(n, false), signals(n), done(ex) {}
  std::vector<std::optional<Reply>> replies;
  std::vector<bool> cancelled;
  std::vector<asio::cancellation_signal> signals;
  rpc::Event done;  // notified as each ask ends
};

std::vector<std::string_view> allowed_action_names(HookKind kind) {
  switch (kind) {
    case HookKind::before_tool_call: return {"continue", "block", "confirm", "modify"};
    case HookKind::after_tool_call: return {"continue", "replace"};
    case HookKind::before_message: return {"continue", "inject"};
    case HookKind::on_message_complete: return {"continue", "context_phase"};
    case HookKind::on_compaction: return {"continue"};
    case HookKind::on_session_start: return {"continue", "inject"};
    case HookKind::on_session_end: return {"continue"};
  }
  return {"continue"};
}

bool allows_tool_filter(HookKind kind) {
  return kind == HookKind::before_tool_call || kind == HookKind::after_tool_call;
}

bool subscription_matches(const HookSubscription& sub, const protocol::HookEvent& event) {
  if (sub.tool) {
    const bool named = (event.tool_name && *event.tool_name == *sub.tool) ||
                       (event.tool_runtime_name && *event.tool_runtime_name == *sub.tool);
    if (!named) return false;
  }
  const boost::json::value input = event.tool_input ? *event.tool_input : boost::json::value(nullptr);
  if (sub.input_equals && *sub.input_equals != input) return false;
  if (sub.input_contains && wire::to_json(input).find(*sub.input_contains) == std::string::npos) return false;
  return true;
}

// One handler's answer under the bus deadline. A deadline wait that ends aborted means the
// ask was cancelled: abandoned, not timed out.
asio::awaitable<HookBus::Reply> HookBus::ask(std::shared_ptr<runtime::ExtensionHandler> handler,
                                             std::shared_ptr<const protocol::HookEvent> event,
                                             std::chrono::milliseconds timeout) {
  asio::steady_timer deadline(co_await asio::this_coro::executor, timeout);
  auto written = std::make_shared<bool>(false);
  auto raced = co_await (answer_of(std::move(handler), std::move(event), written) ||
                         deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    const auto [ec] = std::get<1>(raced);
    co_return Reply{ec ? Outcome::abandoned : Outcome::timed_out, std::nullopt, *written};
  }
  co_return Reply{Outcome::answered, std::get<0>(std::move(raced)), true};
}

std::vector<HookBus::Registration> HookBus::snapshot() const {
  std::lock_guard lock(m_mutex);
  return m_registrations;
}

HookSuspension::Admission HookBus::admit(const Registration& r) const {
  std::lock_guard lock(r.standing->mutex);
  return r.standing->suspension.admit(m_clock());
}

bool HookBus::fails_closed(const Registration& r) const {
  return m_fail_closed || r.subscription.on_error == HookOnError::block;
}

void HookBus::settle(const Registration& r, const Reply& reply, bool probe, std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(r.standing->mutex);
  auto& suspension = r.standing->suspension;
  switch (reply.outcome) {
    case Outcome::answered:
      if (suspension.suspended()) {
        util::log().info("{} answered again; resumed", described(r.handler->id(), r.subscription));
      }
      suspension.answered();
      return;
    case Outcome::timed_out:
      if (!reply.written) {  // never reached the extension: says nothing about it
        if (probe) suspension.probe_abandoned();
        return;
      }
      if (suspension.timed_out(now, probe)) {
        util::log().warn("{} did not answer {} times in a row; suspended for {} s",
                         described(r.handler->id(), r.subscription), suspension.consecutive_timeouts(),
                         k_hook_suspend_interval.count());
      }
      return;
    case Outcome::abandoned:
      if (probe) suspension.probe_abandoned();
      return;
  }
}

Result<void> HookBus::subscribe(std::shared_ptr<runtime::ExtensionHandler> handler, HookSubscription subscription,
                                PermissionSet permissions) {
  if (!permissions.allows_hook(subscription.kind)) {
    return Error::manifest("Extension '" + handler->id() + "' lacks permission '" +
                           std::string(wire_name(required_permission(subscription.kind))) + "' required for hook '" +
                           std::string(protocol::to_string(subscription.kind)) + "'");
  }
  std::lock_guard lock(m_mutex);
  m_registrations.push_back(
      Registration{std::move(handler), std::move(subscription), permissions, std::make_shared<Standing>()});
  return {};
}

void HookBus::unsubscribe_all(const std::string& extension_id) {
  std::lock_guard lock(m_mutex);
  std::erase_if(m_registrations, [&](const Registration& r) { return r.handler->id() == extension_id; });
}

std::size_t HookBus::handler_count() const {
  std::lock_guard lock(m_mutex);
  return m_registrations.size();
}

bool HookBus::has_subscribers(protocol::HookKind kind) const {
  std::lock_guard lock(m_mutex);
  return std::any_of(m_registrations.begin(), m_registrations.end(),
                     [kind](const Registration& r) { return r.subscription.kind == kind; });
}

bool HookBus::has_suspended(const std::string& extension_id) const {
  std::lock_guard lock(m_mutex);
  return std::any_of(m_registrations.begin(), m_registrations.end(), [&](const Registration& r) {
    if (r.handler->id() != extension_id) return false;
    std::lock_guard standing(r.standing->mutex);
    return r.standing->suspension.suspended();
  });
}

std::vector<SuspendedHook> HookBus::suspended_for(const std::string& extension_id) const {
  const auto now = m_clock();
  std::lock_guard lock(m_mutex);
  std::vector<SuspendedHook> out;
  for (const auto& r : m_registrations) {
    if (r.handler->id() != extension_id) continue;
    std::lock_guard standing(r.standing->mutex);
    const auto until = r.standing->suspension.until();
    if (!until) continue;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - now);
    out.push_back(SuspendedHook{r.subscription, *until, std::max(left, std::chrono::milliseconds(0)),
                                r.standing->suspension.consecutive_timeouts()});
  }
  return out;
}

std::vector<std::pair<HookKind, std::optional<std::string>>> HookBus::subscriptions_for(
    const std::string& extension_id) const {
  std::vector<std::pair<HookKind, std::optional<std::string>>> out;
  std::lock_guard lock(m_mutex);
  for (const auto& r : m_registrations) {
    if (r.handler->id() == extension_id) out.emplace_back(r.subscription.kind, r.subscription.tool);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const auto ka = protocol::to_string(a.first), kb = protocol::to_string(b.first);
    if (ka != kb) return ka < kb;
    return a.second < b.second;  // nullopt sorts first
  });
  return out;
}

std::optional<HookVerdict> HookBus::fold_failure(const Registration& r, HookKind kind, const Reply& reply) const {
  const std::string& id = r.handler->id();
  const bool timed_out = reply.outcome == Outcome::timed_out;
  if (fails_closed(r)) {
    const std::string why = failure_text(reply.answer, timed_out, m_timeout);
    if (allows(kind, hr::Block{})) {
      util::log().warn("extension '{}': hook '{}' {}; blocking (fail-closed)", id, protocol::to_string(kind), why);
      return HookVerdict{hr::Block{fail_closed_reason(id, why)}, id, true};
    }
    util::log().error("extension '{}': hook '{}' {}; a hook of this kind cannot block — continuing (on_error: block)", id,
                      protocol::to_string(kind), why);
    return std::nullopt;
  }
  // Fail open, with the reference's log lines.
  if (timed_out) {
    util::log().warn("extension '{}': hook '{}' timed out; continuing", id, protocol::to_string(kind));
  } else if (!reply.answer) {
    util::log().warn("extension '{}': Extension hook handler failed — continuing: its ask ended without an answer", id);
  } else if (const Error& e = reply.answer->error(); e.cause == ErrorCause::stopped) {
    util::log().debug("extension '{}': hook handler stopped with the extension — continuing", id);
  } else if (e.cause != ErrorCause::protocol) {  // an invalid result was logged where it was read
    util::log().warn("extension '{}': Extension hook handler failed — continuing: {}", id, e.message);
  }
  return std::nullopt;
}

std::optional<HookVerdict> HookBus::fold(const Registration& r, HookKind kind, const Reply& reply,
                                         std::vector<std::string>& injections) const {
  if (reply.outcome != Outcome::answered || !reply.answer || !reply.answer->ok()) return fold_failure(r, kind, reply);
  const std::string& id = r.handler->id();
  const HookResult& answer = reply.answer->value();
  if (!allows(kind, answer)) {
    util::log().warn("extension '{}': Extension returned action not allowed for hook — ignoring (hook '{}', action '{}')",
                     id, protocol::to_string(kind), protocol::action_name(answer));
    return std::nullopt;
  }
  if (std::holds_alternative<hr::Continue>(answer)) return std::nullopt;
  if (const auto* inject = std::get_if<hr::Inject>(&answer)) {
    injections.push_back(inject->content);
    return std::nullopt;
  }
  if (std::holds_alternative<hr::Replace>(answer) && !r.permissions.has(Permission::tools_transform_output)) {
    util::log().warn("extension '{}': replace ignored: the extension lacks permission 'tools.transform_output'", id);
    return std::nullopt;
  }
  if (std::holds_alternative<hr::ContextPhase>(answer) &&
      !(r.permissions.has(Permission::privacy_llm_content) && r.permissions.has(Permission::session_lifecycle))) {
    return std::nullopt;  // the two-key gate (SPEC §5.1.5)
  }
  return HookVerdict{answer, id, false};  // block, modify, confirm, permitted replace, permitted context_phase
}

namespace {
HookResult end_of_chain(std::vector<std::string>& injections) {
  if (injections.empty()) return hr::Continue{};
  std::string joined;
  for (std::size_t i = 0; i < injections.size(); ++i) {
    if (i) joined += "\n\n";
    joined += injections[i];
  }
  return hr::Inject{std::move(joined)};
}

std::string_view trace_action(const std::optional<Result<HookResult>>& answer, bool timed_out) {
  if (timed_out) return "timeout";
  if (!answer || !answer->ok()) return "error";
  return protocol::action_name(answer->value());
}
}  // namespace

asio::awaitable<HookVerdict> HookBus::fan_out(protocol::HookEvent event, WhenAbandoned when_abandoned) {
  const bool trace = trace_enabled();
  const HookKind kind = event.kind;
  // The matching subscriptions in order, each admitted (asked, or probed) or, suspended and
  // failing closed, deciding without an ask; nothing after such a one is asked.
  struct Slot {
    Registration registration;
    bool probe = false;
    bool suspended = false;
  };
  std::vector<Slot> slots;
  for (auto& r : snapshot()) {
    if (r.subscription.kind != kind || !subscription_matches(r.subscription, event)) continue;
    const auto admission = admit(r);
    if (admission == HookSuspension::Admission::skip) {
      if (trace) {
        util::log().info("Extension hook trace: hook={} extension={} action=suspended", protocol::to_string(kind),
                         r.handler->id());
      }
      if (!fails_closed(r) || !allows(kind, hr::Block{})) continue;
      slots.push_back(Slot{std::move(r), false, true});
      break;
    }
    slots.push_back(Slot{std::move(r), admission == HookSuspension::Admission::probe, false});
  }
  if (slots.empty()) co_return HookVerdict{};

  const auto shared_event = std::make_shared<const protocol::HookEvent>(std::move(event));
  auto ex = co_await asio::this_coro::executor;
  auto gather = std::make_shared<Gather>(ex, slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].suspended) continue;
    const auto started = std::chrono::steady_clock::now();
    asio::co_spawn(
        ex, ask(slots[i].registration.handler, shared_event, m_timeout),
        asio::bind_cancellation_slot(
            gather->signals[i].slot(),
            [gather, i, registration = slots[i].registration, probe = slots[i].probe, clock = m_clock, trace, kind,
             started](std::exception_ptr thrown, Reply reply) {
              if (thrown || gather->cancelled[i]) reply.outcome = Outcome::abandoned;
              settle(registration, reply, probe, clock());
              if (trace && reply.outcome != Outcome::abandoned) {
                util::log().info(
                    "Extension hook trace: hook={} extension={} action={} duration_ms={} health={} restart_count={}",
                    protocol::to_string(kind), registration.handler->id(),
                    trace_action(reply.answer, reply.outcome == Outcome::timed_out),
                    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                        .count(),
                    to_string(registration.handler->health()), registration.handler->restart_count());
              }
              gather->replies[i] = std::move(reply);
              gather->done.notify();
            }));
  }
  // Cancels the asks from `first` on that are still out; each then ends as abandoned.
  auto cancel_from = [&gather](std::size_t first) {
    for (std::size_t j = first; j < gather->replies.size(); ++j) {
      if (gather->replies[j] || gather->cancelled[j]) continue;
      gather->cancelled[j] = true;
      gather->signals[j].emit(asio::cancellation_type::terminal);
    }
  };

  std::vector<std::string> injections;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].suspended) {
      const Registration& r = slots[i].registration;
      std::size_t timeouts = 0;
      {
        std::lock_guard lock(r.standing->mutex);
        timeouts = r.standing->suspension.consecutive_timeouts();
      }
      util::log().debug("{} is suspended; blocking (fail-closed)", described(r.handler->id(), r.subscription));
      cancel_from(i + 1);
      co_return HookVerdict{
          hr::Block{fail_closed_reason(r.handler->id(), "is suspended after not answering " + std::to_string(timeouts) +
                                                            " times in a row")},
          r.handler->id(), true};
    }
    // The cancellation state is read in place: co_awaiting anything once the caller has
    // cancelled would throw instead.
    for (;;) {
      const auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none) {
        if (when_abandoned == WhenAbandoned::cancel_asks) cancel_from(0);
        co_return HookVerdict{};  // nobody is waiting for the verdict
      }
      if (gather->replies[i]) break;
      co_await gather->done.wait();
    }
    if (auto decided = fold(slots[i].registration, kind, *gather->replies[i], injections)) {
      cancel_from(i + 1);
      co_return std::move(*decided);
    }
  }
  co_return HookVerdict{end_of_chain(injections), {}, false};
}

asio::awaitable<HookVerdict> HookBus::emit(protocol::HookEvent event) {
  co_return co_await fan_out(std::move(event), WhenAbandoned::cancel_asks);
}

asio::awaitable<HookResult> HookBus::emit_concurrent(protocol::HookEvent event) {
  auto verdict = co_await fan_out(std::move(event), WhenAbandoned::keep_asks);
  co_return std::move(verdict.result);
}

}  // namespace exthost::host

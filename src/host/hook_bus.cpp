#include "host/hook_bus.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "rpc/event.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"

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

// The answer boxed: Asio's `||` flattens a std::variant operand into its own variant, which
// would make a HookResult's alternative index indistinguishable from the timer's.
asio::awaitable<std::optional<HookResult>> answer_of(std::shared_ptr<runtime::ExtensionHandler> handler,
                                                     protocol::HookEvent event) {
  co_return co_await handler->handle(event);
}

// Runs `f` when it goes out of scope, unless released first.
template <class F>
class OnExit {
 public:
  explicit OnExit(F f) : m_f(std::move(f)) {}
  OnExit(const OnExit&) = delete;
  OnExit& operator=(const OnExit&) = delete;
  ~OnExit() {
    if (m_armed) m_f();
  }
  void release() { m_armed = false; }

 private:
  F m_f;
  bool m_armed = true;
};

std::string described(const std::string& extension_id, const HookSubscription& sub) {
  std::string text = "hook " + std::string(protocol::to_string(sub.kind));
  if (sub.tool) text += " (tool '" + *sub.tool + "')";
  return text + " of extension '" + extension_id + "'";
}

}  // namespace

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
// caller cancelled this ask: abandoned, not timed out.
asio::awaitable<HookBus::Reply> HookBus::ask(std::shared_ptr<runtime::ExtensionHandler> handler,
                                             protocol::HookEvent event, std::chrono::milliseconds timeout) {
  asio::steady_timer deadline(co_await asio::this_coro::executor, timeout);
  auto raced = co_await (answer_of(handler, std::move(event)) || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) {
    const auto [ec] = std::get<1>(raced);
    co_return Reply{ec ? Outcome::abandoned : Outcome::timed_out, std::nullopt};
  }
  co_return Reply{Outcome::answered, std::get<0>(std::move(raced))};
}

std::vector<HookBus::Registration> HookBus::snapshot() const {
  std::lock_guard lock(m_mutex);
  return m_registrations;
}

HookSuspension::Admission HookBus::admit(const Registration& r) const {
  std::lock_guard lock(r.standing->mutex);
  return r.standing->suspension.admit(m_clock());
}

void HookBus::settle(const Registration& r, Outcome outcome, bool probe, std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(r.standing->mutex);
  auto& suspension = r.standing->suspension;
  switch (outcome) {
    case Outcome::answered:
      if (suspension.suspended()) {
        util::log().info("{} answered again; resumed", described(r.handler->id(), r.subscription));
      }
      suspension.answered();
      return;
    case Outcome::timed_out:
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

std::optional<HookResult> HookBus::fold(const Registration& r, HookKind kind, const std::optional<HookResult>& answer,
                                        std::vector<std::string>& injections) const {
  const std::string& id = r.handler->id();
  if (!answer) {
    util::log().warn("extension '{}': hook '{}' timed out; continuing", id, protocol::to_string(kind));
    return std::nullopt;
  }
  if (!allows(kind, *answer)) {
    util::log().warn("extension '{}': Extension returned action not allowed for hook — ignoring (hook '{}', action '{}')",
                     id, protocol::to_string(kind), protocol::action_name(*answer));
    return std::nullopt;
  }
  if (std::holds_alternative<hr::Continue>(*answer)) return std::nullopt;
  if (const auto* inject = std::get_if<hr::Inject>(&*answer)) {
    injections.push_back(inject->content);
    return std::nullopt;
  }
  if (std::holds_alternative<hr::Replace>(*answer) && !r.permissions.has(Permission::tools_transform_output)) {
    util::log().warn("extension '{}': replace ignored: the extension lacks permission 'tools.transform_output'", id);
    return std::nullopt;
  }
  if (std::holds_alternative<hr::ContextPhase>(*answer) &&
      !(r.permissions.has(Permission::privacy_llm_content) && r.permissions.has(Permission::session_lifecycle))) {
    return std::nullopt;  // the two-key gate (SPEC §5.1.5)
  }
  return *answer;  // block, modify, confirm, permitted replace, permitted context_phase
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
}  // namespace

asio::awaitable<HookResult> HookBus::emit(protocol::HookEvent event) {
  const auto registrations = snapshot();
  const bool trace = trace_enabled();
  std::vector<std::string> injections;
  for (const auto& r : registrations) {
    if (r.subscription.kind != event.kind || !subscription_matches(r.subscription, event)) continue;
    const auto admission = admit(r);
    if (admission == HookSuspension::Admission::skip) {
      if (trace) {
        util::log().info("Extension hook trace: hook={} extension={} action=suspended", protocol::to_string(event.kind),
                         r.handler->id());
      }
      continue;
    }
    const bool probe = admission == HookSuspension::Admission::probe;
    // A probe whose emit is destroyed mid-ask must not leave the subscription waiting for it.
    OnExit unsettled([&r, probe] { settle(r, Outcome::abandoned, probe, {}); });
    const auto started = std::chrono::steady_clock::now();
    auto reply = co_await ask(r.handler, event, m_timeout);
    unsettled.release();
    if (reply.outcome == Outcome::abandoned) {
      settle(r, reply.outcome, probe, {});
      co_return hr::Continue{};  // the caller has gone
    }
    if (trace) {
      util::log().info("Extension hook trace: hook={} extension={} action={} duration_ms={} health={} restart_count={}",
                       protocol::to_string(event.kind), r.handler->id(),
                       reply.answer ? protocol::action_name(*reply.answer) : std::string_view("timeout"),
                       std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                           .count(),
                       to_string(r.handler->health()), r.handler->restart_count());
    }
    auto stop = fold(r, event.kind, reply.answer, injections);
    settle(r, reply.outcome, probe, m_clock());
    if (stop) co_return std::move(*stop);
  }
  co_return end_of_chain(injections);
}

asio::awaitable<HookResult> HookBus::emit_concurrent(protocol::HookEvent event) {
  struct Admitted {
    Registration registration;
    bool probe;
  };
  std::vector<Admitted> matching;
  for (auto& r : snapshot()) {
    if (r.subscription.kind != event.kind || !subscription_matches(r.subscription, event)) continue;
    const auto admission = admit(r);
    if (admission == HookSuspension::Admission::skip) continue;
    matching.push_back(Admitted{std::move(r), admission == HookSuspension::Admission::probe});
  }
  if (matching.empty()) co_return hr::Continue{};
  // Shared with the asks: if this emit is abandoned they finish (and settle) on their own.
  struct Gather {
    explicit Gather(const asio::any_io_executor& ex, std::size_t n) : answers(n), remaining(n), done(ex) {}
    std::vector<std::optional<HookResult>> answers;
    std::size_t remaining;
    rpc::Event done;
  };
  auto ex = co_await asio::this_coro::executor;
  auto gather = std::make_shared<Gather>(ex, matching.size());
  for (std::size_t i = 0; i < matching.size(); ++i) {
    asio::co_spawn(ex, ask(matching[i].registration.handler, event, m_timeout),
                   [gather, i, admitted = matching[i], clock = m_clock](std::exception_ptr, Reply reply) {
                     settle(admitted.registration, reply.outcome, admitted.probe, clock());
                     gather->answers[i] = std::move(reply.answer);
                     if (--gather->remaining == 0) gather->done.notify();
                   });
  }
  while (gather->remaining > 0) co_await gather->done.wait();
  std::vector<std::string> injections;
  for (std::size_t i = 0; i < matching.size(); ++i) {
    if (auto stop = fold(matching[i].registration, event.kind, gather->answers[i], injections)) {
      co_return std::move(*stop);
    }
  }
  co_return end_of_chain(injections);
}

}  // namespace exthost::host

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

// One handler's answer under the bus deadline; nullopt when it did not answer in time.
asio::awaitable<std::optional<HookResult>> ask(std::shared_ptr<runtime::ExtensionHandler> handler,
                                               protocol::HookEvent event, std::chrono::milliseconds timeout) {
  asio::steady_timer deadline(co_await asio::this_coro::executor, timeout);
  auto raced = co_await (answer_of(handler, std::move(event)) || deadline.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 1) co_return std::nullopt;
  co_return std::get<0>(std::move(raced));
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

Result<void> HookBus::subscribe(std::shared_ptr<runtime::ExtensionHandler> handler, HookSubscription subscription,
                                PermissionSet permissions) {
  if (!permissions.allows_hook(subscription.kind)) {
    return Error::manifest("Extension '" + handler->id() + "' lacks permission '" +
                           std::string(wire_name(required_permission(subscription.kind))) + "' required for hook '" +
                           std::string(protocol::to_string(subscription.kind)) + "'");
  }
  m_registrations.push_back(Registration{std::move(handler), std::move(subscription), permissions});
  return {};
}

void HookBus::unsubscribe_all(const std::string& extension_id) {
  std::erase_if(m_registrations, [&](const Registration& r) { return r.handler->id() == extension_id; });
}

std::vector<std::pair<HookKind, std::optional<std::string>>> HookBus::subscriptions_for(
    const std::string& extension_id) const {
  std::vector<std::pair<HookKind, std::optional<std::string>>> out;
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
  const auto snapshot = m_registrations;
  const bool trace = trace_enabled();
  std::vector<std::string> injections;
  for (const auto& r : snapshot) {
    if (r.subscription.kind != event.kind || !subscription_matches(r.subscription, event)) continue;
    const auto started = std::chrono::steady_clock::now();
    auto answer = co_await ask(r.handler, event, m_timeout);
    if (trace) {
      util::log().info("Extension hook trace: hook={} extension={} action={} duration_ms={} health={} restart_count={}",
                       protocol::to_string(event.kind), r.handler->id(),
                       answer ? protocol::action_name(*answer) : std::string_view("timeout"),
                       std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                           .count(),
                       to_string(r.handler->health()), r.handler->restart_count());
    }
    if (auto stop = fold(r, event.kind, answer, injections)) co_return std::move(*stop);
  }
  co_return end_of_chain(injections);
}

asio::awaitable<HookResult> HookBus::emit_concurrent(protocol::HookEvent event) {
  std::vector<Registration> matching;
  for (const auto& r : m_registrations) {
    if (r.subscription.kind == event.kind && subscription_matches(r.subscription, event)) matching.push_back(r);
  }
  if (matching.empty()) co_return hr::Continue{};
  // Shared with the asks: if this emit is abandoned they finish on their own.
  struct Gather {
    explicit Gather(const asio::any_io_executor& ex, std::size_t n) : answers(n), remaining(n), done(ex) {}
    std::vector<std::optional<HookResult>> answers;
    std::size_t remaining;
    rpc::Event done;
  };
  auto ex = co_await asio::this_coro::executor;
  auto gather = std::make_shared<Gather>(ex, matching.size());
  for (std::size_t i = 0; i < matching.size(); ++i) {
    asio::co_spawn(ex, ask(matching[i].handler, event, m_timeout),
                   [gather, i](std::exception_ptr, std::optional<HookResult> answer) {
                     gather->answers[i] = std::move(answer);
                     if (--gather->remaining == 0) gather->done.notify();
                   });
  }
  while (gather->remaining > 0) co_await gather->done.wait();
  std::vector<std::string> injections;
  for (std::size_t i = 0; i < matching.size(); ++i) {
    if (auto stop = fold(matching[i], event.kind, gather->answers[i], injections)) co_return std::move(*stop);
  }
  co_return end_of_chain(injections);
}

}  // namespace exthost::host

// host/hook_bus.hpp — who hears which hook, and how their answers combine (SPEC §6.12).
//
// Registrations are kept per kind in subscription order (load order; discovery loads in
// plugin-name order). emit() asks them one after another: the first block, modify, confirm
// or permitted replace ends the chain; inject contents accumulate; an answer a kind does
// not allow is ignored; a handler that does not answer within the bus deadline is skipped
// (hooks fail open). emit_concurrent() asks every handler at once and folds the answers in
// subscription order under the same rules (exthost applies them on this path too, §9 Q23).
//
// A subscription that times out k_hook_suspend_after_timeouts times in a row is suspended
// (host/hook_suspension.hpp): both emits pass it by until k_hook_suspend_interval has gone,
// then the first event probes it. Only the bus deadline counts as a timeout (a handler's
// own timeout answers continue), so the bus deadline must be no longer than the handler's:
// at equal deadlines the bus's timer, armed first, fires first.
//
// Runs on the host's I/O thread, except has_suspended(), suspended_for(), handler_count(),
// is_empty() and subscriptions_for(), which may be called from any thread. Emitting
// snapshots the registrations, so handlers may be subscribed or removed while an emit is
// under way.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exthost/result.hpp"
#include "host/hook_suspension.hpp"
#include "host/manifest.hpp"
#include "host/permission.hpp"
#include "protocol/hook.hpp"
#include "runtime/extension_handler.hpp"

namespace exthost::host {

// The bus's own deadline per handler, on top of the handler's hook.handle deadline (5 s in
// the reference): one hung extension must not hold a tool call or a message for longer.
inline constexpr std::chrono::milliseconds k_hook_bus_timeout{5000};

// The actions each kind allows, in the reference's order ("continue" first).
std::vector<std::string_view> allowed_action_names(protocol::HookKind kind);
bool allows_tool_filter(protocol::HookKind kind);

// Whether a subscription's tool filter and matcher let `event` through (SPEC §5.1.4).
bool subscription_matches(const HookSubscription& sub, const protocol::HookEvent& event);

// Where the bus reads the time for suspensions; tests pass their own.
using HookClock = std::function<std::chrono::steady_clock::time_point()>;

// A suspended subscription, for display.
struct SuspendedHook {
  HookSubscription subscription;                // kind, tool filter, matcher
  std::chrono::steady_clock::time_point until;  // on the bus's clock: the first event after it probes
  std::chrono::milliseconds retry_in{0};        // until - now when listed; zero once a probe is due
  std::size_t consecutive_timeouts = 0;
};

class HookBus {
 public:
  explicit HookBus(std::chrono::milliseconds timeout = k_hook_bus_timeout,
                   HookClock clock = std::chrono::steady_clock::now)
      : m_timeout(timeout), m_clock(std::move(clock)) {}

  // Error: "Extension '<id>' lacks permission '<perm>' required for hook '<kind>'".
  Result<void> subscribe(std::shared_ptr<runtime::ExtensionHandler> handler, HookSubscription subscription,
                         PermissionSet permissions);
  void unsubscribe_all(const std::string& extension_id);

  boost::asio::awaitable<protocol::HookResult> emit(protocol::HookEvent event);
  // For on_session_end (and other observe-only kinds): never the tool or message hooks.
  boost::asio::awaitable<protocol::HookResult> emit_concurrent(protocol::HookEvent event);

  std::size_t handler_count() const;
  bool is_empty() const { return handler_count() == 0; }
  // (kind, tool filter) of one extension, sorted by kind name then filter (none first).
  std::vector<std::pair<protocol::HookKind, std::optional<std::string>>> subscriptions_for(
      const std::string& extension_id) const;

  // Whether any subscription of the extension is suspended (until a probe is answered).
  bool has_suspended(const std::string& extension_id) const;
  // The extension's suspended subscriptions, in subscription order.
  std::vector<SuspendedHook> suspended_for(const std::string& extension_id) const;

 private:
  // A subscription's suspension record, shared by the registration and every emit's snapshot.
  struct Standing {
    std::mutex mutex;
    HookSuspension suspension;
  };
  struct Registration {
    std::shared_ptr<runtime::ExtensionHandler> handler;
    HookSubscription subscription;
    PermissionSet permissions;
    std::shared_ptr<Standing> standing;
  };
  // How one ask ended: answered (answer set), the bus deadline passed, or its caller left.
  enum class Outcome { answered, timed_out, abandoned };
  struct Reply {
    Outcome outcome = Outcome::abandoned;
    std::optional<protocol::HookResult> answer;
  };

  static boost::asio::awaitable<Reply> ask(std::shared_ptr<runtime::ExtensionHandler> handler,
                                           protocol::HookEvent event, std::chrono::milliseconds timeout);
  std::vector<Registration> snapshot() const;
  HookSuspension::Admission admit(const Registration& r) const;
  // Records how an admitted ask ended; warns when it suspends the subscription.
  static void settle(const Registration& r, Outcome outcome, bool probe, std::chrono::steady_clock::time_point now);
  // What one answer does to the chain: nullopt continues, a value ends it.
  std::optional<protocol::HookResult> fold(const Registration& r, protocol::HookKind kind,
                                           const std::optional<protocol::HookResult>& answer,
                                           std::vector<std::string>& injections) const;

  std::chrono::milliseconds m_timeout;
  HookClock m_clock;
  mutable std::mutex m_mutex;  // guards m_registrations (read from any thread)
  std::vector<Registration> m_registrations;
};

}  // namespace exthost::host

// host/hook_bus.hpp — who hears which hook, and how their answers combine (SPEC §6.12).
//
// Registrations are kept per kind in subscription order (load order; discovery loads in
// plugin-name order). emit() asks every matching subscription at once and folds the answers
// in subscription order, exactly as if it had asked them one after another: the first block,
// modify, confirm or permitted replace ends the chain; inject contents accumulate, joined in
// that order; an answer a kind does not allow is ignored; a handler that does not answer
// within the bus deadline is skipped (hooks fail open). Every subscription sees the event as
// the caller gave it (a modify ends the chain, so no later hook was ever shown a modified
// input), which is why nothing is lost by asking at once. What differs from asking in turn:
// later subscriptions are still asked, and may see an event whose outcome an earlier one has
// already decided. The fold goes as far as the answers allow: once the subscriptions before
// and including the deciding one have answered, emit returns without awaiting the rest, and
// cancels their asks (their requests are abandoned; a late reply is dropped). When emit's own
// caller abandons it, the asks still out are cancelled the same way. emit_concurrent() (for
// on_session_end) folds the same way, but leaves its asks running when it is abandoned.
//
// A failure is not an answer: no answer within the bus deadline, or the handler's Error (an
// error reply, an invalid result, the extension down). A subscription fails open by default
// (the chain goes on as if it had answered continue, with the reference's log lines); one
// whose manifest says `"on_error": "block"`, or every one on a bus built to fail closed,
// blocks the event instead where the kind allows a block (before_tool_call), with a reason
// that names the extension: "blocked: hook of extension 'guard' did not answer within 5 s
// (fail-closed)", "… answered an error: <message> (fail-closed)", "… answered an invalid
// result (fail-closed)", "… is not running (fail-closed)", "… failed: <error> (fail-closed)".
// On a kind that cannot block, the failure of such a subscription is logged as an error and
// the chain goes on.
//
// A subscription that times out k_hook_suspend_after_timeouts times in a row is suspended
// (host/hook_suspension.hpp): the emits pass it by until k_hook_suspend_interval has gone,
// then the first event probes it. A suspended fail-closed subscription of before_tool_call
// blocks in its place ("… is suspended after not answering 3 times in a row (fail-closed)").
// Only the bus deadline counts as a timeout (a handler's own timeout is an error answer), so
// the bus deadline must be no longer than the handler's: at equal deadlines the bus's timer,
// armed first, fires first. An ask counts as it ends: an answer that comes before the
// decision counts as an answer even when the fold no longer needs it; a cancelled ask counts
// as neither.
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
// the reference): one hung extension must not hold a tool call or a message for longer. The
// default; a host's hook deadline option sets both.
inline constexpr std::chrono::milliseconds k_hook_bus_timeout{5000};

// The most of an extension's error message a fail-closed reason repeats.
inline constexpr std::size_t k_max_hook_failure_text = 512;

// What an emit decided, and who decided it.
struct HookVerdict {
  protocol::HookResult result = protocol::hook_result::Continue{};
  // The extension whose answer (or, failing closed, whose failure) ended the chain; empty
  // when none did (every answer continued, or injections were joined).
  std::string extension_id;
  // The result is the bus's own block for a failed fail-closed subscription: its reason
  // already names the extension.
  bool fail_closed = false;
};

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
  // `fail_closed`: every subscription behaves as `"on_error": "block"`.
  explicit HookBus(std::chrono::milliseconds timeout = k_hook_bus_timeout,
                   HookClock clock = std::chrono::steady_clock::now, bool fail_closed = false)
      : m_timeout(timeout), m_clock(std::move(clock)), m_fail_closed(fail_closed) {}

  // Error: "Extension '<id>' lacks permission '<perm>' required for hook '<kind>'".
  Result<void> subscribe(std::shared_ptr<runtime::ExtensionHandler> handler, HookSubscription subscription,
                         PermissionSet permissions);
  void unsubscribe_all(const std::string& extension_id);

  boost::asio::awaitable<HookVerdict> emit(protocol::HookEvent event);
  // For on_session_end (and other observe-only kinds): emit() whose asks, when it is
  // abandoned (a time budget), run on to their end and count.
  boost::asio::awaitable<protocol::HookResult> emit_concurrent(protocol::HookEvent event);

  std::size_t handler_count() const;
  bool is_empty() const { return handler_count() == 0; }
  // Whether anyone subscribed to `kind` (an emit of it with nobody to ask is a no-op).
  bool has_subscribers(protocol::HookKind kind) const;
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
  // How one ask ended: answered (answer set: the handler's answer or its Error), the bus
  // deadline passed, or it was cancelled.
  enum class Outcome { answered, timed_out, abandoned };
  struct Reply {
    Outcome outcome = Outcome::abandoned;
    std::optional<Result<protocol::HookResult>> answer;
    // Whether the request reached the extension: one that timed out still waiting in the
    // host for a place (its declared concurrency taken by other calls) fails like any
    // timeout, but does not count toward suspending the subscription.
    bool written = true;
  };
  struct Gather;
  // What the caller of a fan-out does to the asks still out when it abandons the emit.
  enum class WhenAbandoned { cancel_asks, keep_asks };

  static boost::asio::awaitable<Reply> ask(std::shared_ptr<runtime::ExtensionHandler> handler,
                                           std::shared_ptr<const protocol::HookEvent> event,
                                           std::chrono::milliseconds timeout);
  boost::asio::awaitable<HookVerdict> fan_out(protocol::HookEvent event, WhenAbandoned when_abandoned);
  std::vector<Registration> snapshot() const;
  HookSuspension::Admission admit(const Registration& r) const;
  bool fails_closed(const Registration& r) const;
  // Records how an admitted ask ended; warns when it suspends the subscription.
  static void settle(const Registration& r, const Reply& reply, bool probe, std::chrono::steady_clock::time_point now);
  // What one ask's end does to the chain: nullopt continues, a value ends it.
  std::optional<HookVerdict> fold(const Registration& r, protocol::HookKind kind, const Reply& reply,
                                  std::vector<std::string>& injections) const;
  // A failed ask: fails open (logged as the reference does), or closed.
  std::optional<HookVerdict> fold_failure(const Registration& r, protocol::HookKind kind, const Reply& reply) const;

  std::chrono::milliseconds m_timeout;
  HookClock m_clock;
  bool m_fail_closed = false;
  mutable std::mutex m_mutex;  // guards m_registrations (read from any thread)
  std::vector<Registration> m_registrations;
};

}  // namespace exthost::host

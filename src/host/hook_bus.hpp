// host/hook_bus.hpp — who hears which hook, and how their answers combine (SPEC §6.12).
//
// Registrations are kept per kind in subscription order (load order; discovery loads in
// plugin-name order). emit() asks them one after another: the first block, modify, confirm
// or permitted replace ends the chain; inject contents accumulate; an answer a kind does
// not allow is ignored; a handler that does not answer within the bus deadline is skipped
// (hooks fail open). emit_concurrent() asks every handler at once and folds the answers in
// subscription order under the same rules (exthost applies them on this path too, §9 Q23).
//
// Runs on the host's I/O thread only. Emitting snapshots the registrations, so handlers
// may be subscribed or removed while an emit is under way.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exthost/result.hpp"
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

class HookBus {
 public:
  explicit HookBus(std::chrono::milliseconds timeout = k_hook_bus_timeout) : m_timeout(timeout) {}

  // Error: "Extension '<id>' lacks permission '<perm>' required for hook '<kind>'".
  Result<void> subscribe(std::shared_ptr<runtime::ExtensionHandler> handler, HookSubscription subscription,
                         PermissionSet permissions);
  void unsubscribe_all(const std::string& extension_id);

  boost::asio::awaitable<protocol::HookResult> emit(protocol::HookEvent event);
  // For on_session_end (and other observe-only kinds): never the tool or message hooks.
  boost::asio::awaitable<protocol::HookResult> emit_concurrent(protocol::HookEvent event);

  std::size_t handler_count() const { return m_registrations.size(); }
  bool is_empty() const { return m_registrations.empty(); }
  // (kind, tool filter) of one extension, sorted by kind name then filter (none first).
  std::vector<std::pair<protocol::HookKind, std::optional<std::string>>> subscriptions_for(
      const std::string& extension_id) const;

 private:
  struct Registration {
    std::shared_ptr<runtime::ExtensionHandler> handler;
    HookSubscription subscription;
    PermissionSet permissions;
  };
  // What one answer does to the chain: nullopt continues, a value ends it.
  std::optional<protocol::HookResult> fold(const Registration& r, protocol::HookKind kind,
                                           const std::optional<protocol::HookResult>& answer,
                                           std::vector<std::string>& injections) const;

  std::chrono::milliseconds m_timeout;
  std::vector<Registration> m_registrations;
};

}  // namespace exthost::host

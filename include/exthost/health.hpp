// exthost/health.hpp — how an extension is doing.
//
// Health is the coarse status for display; Lifecycle is a point-in-time observation of the
// child actually serving, pinned by generation. Generations are opaque, local to one
// extension, even while the child they name is live and odd once it has been invalidated.
#pragma once

#include <cstdint>
#include <string_view>

namespace exthost {

enum class Health {
  loaded,             // spawned, initialize not answered yet
  failed_validation,  // the manifest failed validation; nothing started
  failed_initialize,  // the child started but its handshake failed
  running,            // healthy and serving
  restarting,         // a restart after a transport failure is under way
  degraded,           // serving, but it has been restarted at least once
  unresponsive,       // calls that reached it went unanswered in a row; being restarted
  failed,             // stopped for good: restart budget spent, or the transport is gone
};

// The wire and display names: "loaded", "failed_validation", ….
constexpr std::string_view to_string(Health h) {
  switch (h) {
    case Health::loaded: return "loaded";
    case Health::failed_validation: return "failed_validation";
    case Health::failed_initialize: return "failed_initialize";
    case Health::running: return "running";
    case Health::restarting: return "restarting";
    case Health::degraded: return "degraded";
    case Health::unresponsive: return "unresponsive";
    case Health::failed: return "failed";
  }
  return "failed";
}

// A point-in-time observation, not a lease on future execution: a caller that keeps
// authority must pin the generation and require the same one, with running or degraded
// health, when it accepts a reply.
struct Lifecycle {
  std::uint64_t generation = 0;
  Health health = Health::failed;
  friend bool operator==(const Lifecycle&, const Lifecycle&) = default;
};

}  // namespace exthost

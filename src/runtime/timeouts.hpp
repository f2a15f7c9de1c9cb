// runtime/timeouts.hpp — the per-method deadlines (SPEC A2). Each is the real limit of its
// method; all are host options with these defaults.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace exthost::runtime {

struct Timeouts {
  std::chrono::milliseconds tool_call{120'000};         // tools may do real work
  std::chrono::milliseconds provider_complete{60'000};  // one model turn
  std::chrono::milliseconds provider_stream{60'000};
  std::chrono::milliseconds command_invoke{120'000};    // interactive commands may download
  std::chrono::milliseconds hook{5'000};                // hooks sit on the tool path
  std::chrono::milliseconds quick{5'000};               // info.get, settings.editor.*, sidecar.spawn_args
  std::chrono::milliseconds initialize{10'000};         // at load and at restart (§9 Q5)
  std::chrono::milliseconds other{30'000};              // any other method
  std::chrono::milliseconds shutdown_request{500};      // the polite rung of the stop ladder
  std::chrono::milliseconds shutdown_grace{500};        // SIGTERM to SIGKILL

  // The deadline of `method` as call() applies it.
  std::chrono::milliseconds for_method(std::string_view method) const {
    if (method == "tool.call") return tool_call;
    if (method == "provider.complete") return provider_complete;
    if (method == "provider.stream") return provider_stream;
    if (method == "command.invoke") return command_invoke;
    if (method == "hook.handle") return hook;
    if (method == "info.get" || method == "sidecar.spawn_args" || method.starts_with("settings.editor.")) return quick;
    if (method == "initialize") return initialize;
    if (method == "shutdown") return shutdown_request;
    return other;
  }
};

// "120s" for whole seconds, else "1500ms": how deadlines appear in error texts.
inline std::string duration_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

}  // namespace exthost::runtime

// exthost/retry.hpp — which calls a restarted extension gets again.
#pragma once

namespace exthost {

// When an extension's child fails mid-call (it exits, is killed, closes its output or
// writes garbage), the host restarts it within the restart budget. What happens to the
// call that was running:
enum class RetryMode {
  // Sent once more to the restarted child only if repeating it is safe: hook events,
  // info.get, sidecar.spawn_args, settings.editor.open, and tools whose spec says
  // "idempotent": true. Any other call fails with how the child ended and its stderr tail,
  // and is not run again (a tool that wrote before it crashed does not write twice).
  safe,
  // Every call is sent once more (the reference design's behaviour).
  reference,
};

}  // namespace exthost

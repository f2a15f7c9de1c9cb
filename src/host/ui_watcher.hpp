// host/ui_watcher.hpp — an embedder's watch on one extension's widget.* and
// settings.editor.* notifications (Host::watch_ui_events).
//
// It subscribes at once, and subscribes again whenever a subscription ends (the transport
// closed: the child crashed or was killed) while the extension is still loaded. The Inbox
// outlives restarts; a transport's end ends its subscriptions before any next child is
// spawned, and queues the watcher's wake-up on the I/O thread ahead of anything that
// child's reader can do, so the renewal misses none of its notifications. The watcher
// holds the extension weakly and ends once it is stopped (unloaded) or gone.
//
// Each valid event goes, as JSON text, to the callback on the Host's callback thread, in
// order. At most k_ui_watch_backlog events wait for the callback; past that the watcher
// waits (asynchronously) and the extension's notifications back up behind it.
#pragma once

#include <cstddef>
#include <memory>

#include "exthost/host.hpp"
#include "host/callback_thread.hpp"
#include "runtime/process_extension.hpp"

namespace exthost::host {

inline constexpr std::size_t k_ui_watch_backlog = 64;

// I/O thread only. Subscribed before it returns: no notification sent later is missed.
// `callbacks` must outlive the I/O thread's coroutines.
void start_ui_watcher(const std::shared_ptr<runtime::ProcessExtension>& ext, CallbackThread& callbacks,
                      EventCallback on_event);

}  // namespace exthost::host

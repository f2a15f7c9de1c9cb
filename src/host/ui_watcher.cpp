#include "host/ui_watcher.hpp"

#include <boost/asio/co_spawn.hpp>
#include <string>

#include "host/exception_text.hpp"
#include "host/handoff_queue.hpp"
#include "protocol/ui_event.hpp"
#include "util/log.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace asio = boost::asio;

namespace {

struct Watch {
  std::string id;
  rpc::Subscription subscription;
  std::shared_ptr<HandoffQueue<std::string>> backlog;
  std::shared_ptr<const EventCallback> on_event;
  CallbackThread* callbacks;
};

// The event's JSON text, or nullopt for another method or a malformed event (logged).
std::optional<std::string> ui_event_text(const std::string& id, const rpc::NotificationFrame& frame) {
  Result<protocol::UiEvent> event = Error::internal("not a UI event");
  if (protocol::is_widget_method(frame.method)) {
    event = protocol::parse_widget_event(frame.method, frame.params);
  } else if (protocol::is_settings_editor_method(frame.method)) {
    event = protocol::parse_settings_editor_event(frame.method, frame.params);
  } else {
    return std::nullopt;
  }
  if (!event) {
    util::log().warn("extension '{}': Skipping malformed {} notification: {}", id, frame.method, event.error().message);
    return std::nullopt;
  }
  return wire::to_json(protocol::to_json(event.value()));
}

asio::awaitable<void> watch(Watch w) {
  for (;;) {
    auto frame = co_await w.subscription.queue().pop();
    if (!frame) co_return;  // the extension was stopped
    auto text = ui_event_text(w.id, *frame);
    if (!text) continue;
    if (!co_await w.backlog->push(std::move(*text))) co_return;
    w.callbacks->post("a UI watcher's callback of extension '" + w.id + "'",
                      [backlog = w.backlog, on_event = w.on_event] {
                        if (auto e = backlog->try_pop()) (*on_event)(*e);
                      });
  }
}

}  // namespace

void start_ui_watcher(const std::shared_ptr<runtime::ProcessExtension>& ext, CallbackThread& callbacks,
                      EventCallback on_event) {
  auto ex = ext->inbox().executor();
  Watch w{ext->id(), ext->subscribe_notifications(), std::make_shared<HandoffQueue<std::string>>(ex, k_ui_watch_backlog),
          nullptr, &callbacks};
  if (on_event) {
    w.on_event = std::make_shared<const EventCallback>(std::move(on_event));
  } else {
    w.on_event = std::make_shared<const EventCallback>([](const std::string&) {});
  }
  asio::co_spawn(ex, watch(std::move(w)), [id = ext->id()](std::exception_ptr e) {
    if (e) util::log().error("extension '{}': a UI watcher ended: {}", id, exception_text(e));
  });
}

}  // namespace exthost::host

#include "host/ui_watcher.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <deque>
#include <string>

#include "util/exception_text.hpp"
#include "host/handoff_queue.hpp"
#include "protocol/ui_event.hpp"
#include "util/log.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

struct Watch {
  std::weak_ptr<runtime::ProcessExtension> ext;
  std::string id;
  // Oldest first: an ended subscription is drained before the one that replaced it.
  std::deque<rpc::Subscription> subscriptions;
  std::shared_ptr<HandoffQueue<std::string>> backlog;
  std::shared_ptr<const EventCallback> on_event;
  CallbackThread* callbacks;

  // Subscribes again when the newest subscription has ended and the extension is still
  // loaded. Synchronous: nothing runs on the I/O thread between the end and the renewal.
  void renew() {
    if (!subscriptions.empty() && !subscriptions.back().queue().closed()) return;
    auto e = ext.lock();
    if (!e || e->stopped()) return;
    subscriptions.push_back(e->subscribe_notifications());
  }
  bool live() { return !subscriptions.empty() && !subscriptions.back().queue().closed(); }
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
    w.renew();
    if (w.subscriptions.empty()) co_return;  // stopped or gone
    auto frame = co_await w.subscriptions.front().queue().pop();
    if (!frame) {
      w.subscriptions.pop_front();  // ended and drained
      continue;
    }
    auto text = ui_event_text(w.id, *frame);
    if (!text) continue;
    // Waiting for the callback to catch up must not miss a subscription's end.
    while (w.backlog->full()) {
      if (w.live()) {
        co_await (w.backlog->wait_room() || w.subscriptions.back().queue().wait_ended());
      } else {
        co_await w.backlog->wait_room();
      }
      w.renew();
    }
    w.backlog->push_now(std::move(*text));
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
  Watch w{ext, ext->id(), {}, std::make_shared<HandoffQueue<std::string>>(ex, k_ui_watch_backlog), nullptr, &callbacks};
  if (on_event) {
    w.on_event = std::make_shared<const EventCallback>(std::move(on_event));
  } else {
    w.on_event = std::make_shared<const EventCallback>([](const std::string&) {});
  }
  w.subscriptions.push_back(ext->subscribe_notifications());
  asio::co_spawn(ex, watch(std::move(w)), [id = ext->id()](std::exception_ptr e) {
    if (e) util::log().error("extension '{}': a UI watcher ended: {}", id, util::exception_text(e));
  });
}

}  // namespace exthost::host

// rpc/notification_queue.hpp — the bounded hand-off between a reader and one subscriber.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <string>

#include "rpc/bounded_queue.hpp"
#include "rpc/byte_budget.hpp"

namespace exthost::rpc {

// Eight frames per subscriber (reference): with the 4 MiB frame cap this bounds what one
// subscriber can park in host memory; past it the reader waits instead of buffering.
inline constexpr std::size_t k_notification_queue_capacity = 8;

struct NotificationFrame {
  std::string method;
  boost::json::value params;  // null when the frame had none
  BudgetLease lease;          // the extension's parked bytes this frame holds (SPEC A6)
};

class NotificationQueue : public BoundedQueue<NotificationFrame> {
 public:
  explicit NotificationQueue(const boost::asio::any_io_executor& ex)
      : BoundedQueue<NotificationFrame>(ex, k_notification_queue_capacity) {}
};

}  // namespace exthost::rpc

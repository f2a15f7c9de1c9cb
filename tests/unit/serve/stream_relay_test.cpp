// The hand-over of stream events: bounded by bytes, never waiting on the offering side.
#include "serve/stream_relay.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using exthost::server::k_stream_buffer_budget;
using exthost::server::StreamRelay;

TEST(StreamRelay, EventsComeOutInOrderThenTheEnd) {
  StreamRelay relay;
  relay.offer("a");
  relay.offer("b");
  relay.close();
  EXPECT_EQ(relay.take(), "a");
  EXPECT_EQ(relay.take(), "b");
  EXPECT_EQ(relay.take(), std::nullopt);
  EXPECT_FALSE(relay.overflowed());
  EXPECT_EQ(relay.kept(), 2u);
}

TEST(StreamRelay, PastTheBudgetTheStreamIsCutButWhatWasKeptIsStillDelivered) {
  StreamRelay relay;
  const std::string event(64 * 1024, 'x');
  std::size_t offered = 0;
  for (; offered * event.size() < 2 * k_stream_buffer_budget; ++offered) relay.offer(event);
  EXPECT_TRUE(relay.overflowed());
  const auto kept = relay.kept();
  EXPECT_EQ(kept, k_stream_buffer_budget / event.size()) << "kept while less than the budget waited";
  std::size_t taken = 0;
  while (relay.take()) ++taken;  // ends without close(): the stream was cut
  EXPECT_EQ(taken, kept);
  relay.offer("late");
  EXPECT_EQ(relay.kept(), kept) << "nothing is kept after the cut";
}

TEST(StreamRelay, AnEventTakenNoLongerCounts) {
  StreamRelay relay;
  const std::string event(k_stream_buffer_budget / 2, 'x');
  relay.offer(event);
  relay.offer(event);
  ASSERT_TRUE(relay.take());
  relay.offer(event);
  EXPECT_FALSE(relay.overflowed());
}

TEST(StreamRelay, ACutDropsWhatWaits) {
  StreamRelay relay;
  relay.offer("a");
  relay.cut();
  EXPECT_EQ(relay.take(), std::nullopt);
  EXPECT_FALSE(relay.overflowed());
}

}  // namespace

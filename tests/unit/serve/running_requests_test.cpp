// The running requests a cancel may stop: found by id as the client wrote it, bounded by the
// in-flight cap, forgotten once answered.
#include "serve/running_requests.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace {

using exthost::server::number_id_key;
using exthost::server::RunningRequests;
using exthost::server::string_id_key;

TEST(RunningRequests, ACancelStopsTheRequestOfThatIdOnly) {
  RunningRequests running(4);
  auto seven = running.add(number_id_key("7"));
  auto eight = running.add(number_id_key("8"));
  EXPECT_EQ(running.cancel(number_id_key("7")), 1u);
  EXPECT_TRUE(seven.source.get_token().stop_requested());
  EXPECT_FALSE(eight.source.get_token().stop_requested());
}

TEST(RunningRequests, AStringAndANumberOfTheSameTextAreTwoIds) {
  RunningRequests running(4);
  auto number = running.add(number_id_key("7"));
  EXPECT_EQ(running.cancel(string_id_key("7")), 0u);
  EXPECT_FALSE(number.source.get_token().stop_requested());
  EXPECT_EQ(running.cancel(number_id_key("7.0")), 0u) << "a number is matched by its spelling";
  EXPECT_FALSE(number.source.get_token().stop_requested());
}

TEST(RunningRequests, AnUnknownOrRemovedIdCancelsNothing) {
  RunningRequests running(4);
  EXPECT_EQ(running.cancel(string_id_key("a")), 0u);
  auto a = running.add(string_id_key("a"));
  running.remove(a);
  EXPECT_EQ(running.size(), 0u);
  EXPECT_EQ(running.cancel(string_id_key("a")), 0u);
  EXPECT_FALSE(a.source.get_token().stop_requested());
}

TEST(RunningRequests, RequestsSharingAnIdAreCancelledTogetherAndRemovedOneByOne) {
  RunningRequests running(4);
  auto first = running.add(string_id_key("x"));
  auto second = running.add(string_id_key("x"));
  running.remove(first);
  EXPECT_EQ(running.size(), 1u);
  EXPECT_EQ(running.cancel(string_id_key("x")), 1u);
  EXPECT_TRUE(second.source.get_token().stop_requested());
  EXPECT_FALSE(first.source.get_token().stop_requested()) << "removed before the cancel";
}

TEST(RunningRequests, NoMoreThanItsCapacity) {
  RunningRequests running(2);
  auto a = running.add(number_id_key("1"));
  auto b = running.add(number_id_key("2"));
  EXPECT_THROW(running.add(number_id_key("3")), std::length_error);
  running.remove(a);
  EXPECT_NO_THROW(running.add(number_id_key("3")));
  EXPECT_EQ(running.size(), 2u);
}

}  // namespace

// Ported from the reference's provider registry tests (SPEC §8.12).
#include "host/provider_registry.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace exthost::host {
namespace {

protocol::ProviderSpec spec(std::string id, const char* caps = "null") {
  protocol::ProviderSpec p;
  p.id = std::move(id);
  p.display_name = "Display";
  p.description = "d";
  p.models.push_back(protocol::ProviderModelSpec{"m1", std::string("Model One"), boost::json::parse(caps), 8192});
  return p;
}

TEST(ProviderRegistry, SummariesIncludeToolUseCapabilityAndContextMetadata) {
  ProviderRegistry r;
  ASSERT_TRUE(r.register_provider("plug", spec("local", R"({"tool_use":true,"streaming":true})")).ok());
  const auto s = r.summaries();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].runtime_id, "plug:local");
  ASSERT_EQ(s[0].models.size(), 1u);
  EXPECT_EQ(s[0].models[0], (ProviderModelSummary{"plug:local:m1", "Model One", true, true, 8192}));
}

TEST(ProviderRegistry, SummariesDefaultStreamingToFalseWhenTheCapabilityIsAbsent) {
  ProviderRegistry r;
  ASSERT_TRUE(r.register_provider("plug", spec("local", R"({"tool_use":true})")).ok());
  EXPECT_FALSE(r.summaries()[0].models[0].streaming);
}

TEST(ProviderRegistry, NamespacesProvidersByPluginAndRejectsDuplicates) {
  ProviderRegistry r;
  ASSERT_TRUE(r.register_provider("a", spec("local")).ok());
  ASSERT_TRUE(r.register_provider("b", spec("local")).ok());
  auto dup = r.register_provider("a", spec("local"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "provider 'a:local' is already registered");
  EXPECT_EQ(r.summaries().size(), 2u);
}

TEST(ProviderRegistry, UnregisteringAPluginRemovesItsProvidersOnly) {
  ProviderRegistry r;
  ASSERT_TRUE(r.register_provider("a", spec("one")).ok());
  ASSERT_TRUE(r.register_provider("a", spec("two")).ok());
  ASSERT_TRUE(r.register_provider("b", spec("one")).ok());
  r.unregister_plugin("a");
  const auto s = r.summaries();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].runtime_id, "b:one");
}

TEST(ProviderRegistry, ModelIdsUseAThreePartNamespace) {
  auto m = ProviderRegistry::parse_model_id("plug:local:m1");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->plugin, "plug");
  EXPECT_EQ(m->provider, "local");
  EXPECT_EQ(m->model, "m1");
  for (const char* bad : {"plug:local", "a:b:c:d", "::m", "a::m", "a:b:", ""}) EXPECT_FALSE(ProviderRegistry::parse_model_id(bad)) << bad;
}

TEST(ProviderRegistry, ASnapshotRoundTripsEquality) {
  ProviderRegistry r;
  ASSERT_TRUE(r.register_provider("plug", spec("local", R"({"streaming":true})")).ok());
  const auto a = r.summaries();
  const auto b = r.summaries("plug");
  EXPECT_EQ(a, b);
  EXPECT_TRUE(r.summaries("other").empty());
}

}  // namespace
}  // namespace exthost::host

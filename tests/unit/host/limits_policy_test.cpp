// The manifest's limits section, the host's ceiling over it, and the KEY=VALUE form.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "host/limits_policy.hpp"

namespace {

using exthost::ResourceLimits;
using exthost::host::effective_limits;
using exthost::host::parse_limits_section;

exthost::Result<ResourceLimits> parse(const std::string& ext_json) {
  return parse_limits_section(boost::json::parse(ext_json).as_object());
}

std::string error_of(const exthost::Result<ResourceLimits>& r) { return r ? std::string("(no error)") : r.error().message; }

TEST(LimitsSection, EveryKeyIsRead) {
  auto r = parse(R"({"limits":{"address_space_mib":512,"open_files":256,"processes":32,"cpu_seconds":600}})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->address_space_mib, 512u);
  EXPECT_EQ(r->open_files, 256u);
  EXPECT_EQ(r->processes, 32u);
  EXPECT_EQ(r->cpu_seconds, 600u);
  EXPECT_EQ(exthost::describe_limits(*r), "address space 512 MiB, open files 256, processes 32, CPU 600 s");
}

TEST(LimitsSection, AbsentOrNullAsksForNothing) {
  EXPECT_FALSE(parse(R"({})")->any());
  EXPECT_FALSE(parse(R"({"limits":null})")->any());
  EXPECT_FALSE(parse(R"({"limits":{}})")->any());
  EXPECT_EQ(exthost::describe_limits(ResourceLimits{}), "none");
}

TEST(LimitsSection, BadValuesAreRefusedByName) {
  EXPECT_EQ(error_of(parse(R"({"limits":[]})")), "Failed to parse extension manifest: invalid type for `limits`, expected a map");
  EXPECT_EQ(error_of(parse(R"({"limits":{"memory":1}})")),
            "Failed to parse extension manifest: limits: unknown field `memory`, expected one of `address_space_mib`, "
            "`open_files`, `processes`, `cpu_seconds`");
  EXPECT_EQ(error_of(parse(R"({"limits":{"open_files":"64"}})")),
            "Failed to parse extension manifest: limits.open_files: expected an integer, got a string");
  EXPECT_EQ(error_of(parse(R"({"limits":{"cpu_seconds":1.5}})")),
            "Failed to parse extension manifest: limits.cpu_seconds: expected an integer, got a fraction");
  EXPECT_EQ(error_of(parse(R"({"limits":{"processes":0}})")),
            "Failed to parse extension manifest: limits.processes: 0 is out of range (1 to 1099511627776)");
  EXPECT_EQ(error_of(parse(R"({"limits":{"processes":-3}})")),
            "Failed to parse extension manifest: limits.processes: -3 is out of range (1 to 1099511627776)");
  // One above the largest value: crosses k_max_limit_value.
  EXPECT_EQ(error_of(parse(R"({"limits":{"address_space_mib":1099511627777}})")),
            "Failed to parse extension manifest: limits.address_space_mib: 1099511627777 is out of range (1 to "
            "1099511627776)");
  EXPECT_TRUE(parse(R"({"limits":{"address_space_mib":1099511627776}})"));
}

TEST(EffectiveLimits, TheManifestMayLowerTheHostsLimitsAndSetUnsetOnes) {
  ResourceLimits host;
  host.cpu_seconds = 60;
  host.open_files = 1024;
  ResourceLimits asked;
  asked.cpu_seconds = 5;
  asked.processes = 16;
  auto r = effective_limits("x", host, asked);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cpu_seconds, 5u);
  EXPECT_EQ(r->open_files, 1024u) << "the host's, where the manifest asks for none";
  EXPECT_EQ(r->processes, 16u) << "the host sets no processes limit: any is allowed";
  EXPECT_FALSE(r->address_space_mib);
}

TEST(EffectiveLimits, AskingForMoreThanTheHostAllowsIsRefused) {
  ResourceLimits host;
  host.address_space_mib = 512;
  ResourceLimits asked;
  asked.address_space_mib = 513;
  auto r = effective_limits("big", host, asked);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Extension 'big' manifest asks for limits.address_space_mib = 513, above the host's limit of 512");
  asked.address_space_mib = 512;
  EXPECT_TRUE(effective_limits("big", host, asked)) << "equal is within";
}

TEST(SetLimit, ReadsKeyEqualsValue) {
  ResourceLimits l;
  ASSERT_TRUE(exthost::set_limit(l, "cpu_seconds=5"));
  ASSERT_TRUE(exthost::set_limit(l, "open_files=64"));
  EXPECT_EQ(l.cpu_seconds, 5u);
  EXPECT_EQ(l.open_files, 64u);
  auto bad_key = exthost::set_limit(l, "cpu=5");
  ASSERT_FALSE(bad_key);
  EXPECT_NE(bad_key.error().message.find("KEY one of `address_space_mib`"), std::string::npos);
  EXPECT_FALSE(exthost::set_limit(l, "cpu_seconds"));
  EXPECT_FALSE(exthost::set_limit(l, "cpu_seconds=0"));
  EXPECT_FALSE(exthost::set_limit(l, "cpu_seconds=5s"));
  EXPECT_FALSE(exthost::set_limit(l, "cpu_seconds=1099511627777"));
  EXPECT_EQ(l.cpu_seconds, 5u) << "a refused value changes nothing";
}

TEST(ValidateLimits, ZeroAndTooLargeAreRefused) {
  ResourceLimits l;
  EXPECT_TRUE(exthost::validate_limits(l));
  l.open_files = 0;
  auto r = exthost::validate_limits(l);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "limit open_files = 0 is out of range (1 to 1099511627776)");
  l.open_files = exthost::k_max_limit_value + 1;
  EXPECT_FALSE(exthost::validate_limits(l));
}

}  // namespace

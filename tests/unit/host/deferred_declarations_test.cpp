// A manifest's deferred declarations (SPEC §5.3.2 legacy aliases, §6.18 bounds and reasons).
#include "host/deferred_declarations.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace exthost::host {
namespace {

namespace json = boost::json;

PermissionSet all_registrations() {
  PermissionSet p;
  p.add(Permission::tools_register);
  p.add(Permission::providers_register);
  p.add(Permission::context_providers_register);
  return p;
}

DeferredDeclarations parse(const char* root_json) {
  const auto root = json::parse(root_json).as_object();
  auto d = parse_deferred(root, root.at("extension").as_object());
  EXPECT_TRUE(d) << (d ? "" : d.error().message);
  EXPECT_TRUE(d && d->has_value());
  return d && d->has_value() ? **d : DeferredDeclarations{};
}

std::optional<std::string> reason(const char* deferred_json, PermissionSet granted = all_registrations(),
                                  bool has_hooks = false) {
  const std::string root = std::string(R"({"extension":{"deferred":)") + deferred_json + "}}";
  const auto v = json::parse(root).as_object();
  auto d = parse_deferred(v, v.at("extension").as_object());
  EXPECT_TRUE(d && d->has_value());
  return deferred_invalid_reason(**d, granted, has_hooks);
}

constexpr const char* k_tool = R"({"name":"echo","description":"Echo","input_schema":{"type":"object"}})";
constexpr const char* k_provider =
    R"({"id":"llm","display_name":"LLM","description":"A model","models":[{"id":"small","capabilities":{"tool_use":true}}]})";

TEST(DeferredDeclarations, AbsentBlockMeansNone) {
  const auto root = json::parse(R"({"extension":{"command":"x"}})").as_object();
  auto d = parse_deferred(root, root.at("extension").as_object());
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->has_value());
}

TEST(DeferredDeclarations, ValidDeclarationsPassAndAreKept) {
  auto d = parse((std::string(R"({"extension":{"deferred":{"tools":[)") + k_tool + R"(],"providers":[)" + k_provider +
                  R"(],"context_providers":[{"id":"ctx","capability":"search","description":"d","schema_version":1}]}}})")
                     .c_str());
  EXPECT_EQ(d.tools.size(), 1u);
  EXPECT_EQ(d.providers.size(), 1u);
  EXPECT_EQ(deferred_invalid_reason(d, all_registrations(), false), std::nullopt);
}

TEST(DeferredDeclarations, LegacyAliasesBecomeANativeBlock) {
  auto d = parse((std::string(R"({"tools":[)") + k_tool + R"(],"extension":{"activation":"deferred"}})").c_str());
  EXPECT_TRUE(d.from_legacy_aliases);
  EXPECT_EQ(d.tools.size(), 1u);
  EXPECT_TRUE(d.providers.empty());
  EXPECT_EQ(d.lifecycle, DeferredLifecycle::none);
}

TEST(DeferredDeclarations, LegacyAliasMisuseIsRefusedWithTheReferenceTexts) {
  auto err = [](const char* root_json) {
    const auto root = json::parse(root_json).as_object();
    auto d = parse_deferred(root, root.at("extension").as_object());
    return d ? std::string() : d.error().message;
  };
  EXPECT_EQ(err(R"({"extension":{"activation":"lazy"}})"),
            "Failed to parse extension manifest: unsupported extension activation 'lazy' (supported: \"deferred\"); "
            "refusing to fall back to the eager lifecycle");
  EXPECT_EQ(err(R"({"tools":[{}],"extension":{"activation":"deferred","deferred":{}}})"),
            "Failed to parse extension manifest: extension declares both a native 'deferred' block and legacy "
            "'tools'/'activation' aliases; use only the native 'deferred' block");
  EXPECT_EQ(err(R"({"tools":[],"extension":{"activation":"deferred"}})"),
            "Failed to parse extension manifest: extension declares activation \"deferred\" without legacy 'tools' "
            "declarations; declare tools or use the native 'deferred' block");
}

TEST(DeferredDeclarations, HostileOrUnboundedDeclarationsFailClosed) {
  std::string many = R"({"tools":[)";
  for (std::size_t i = 0; i <= k_max_declared_tools; ++i) {
    if (i) many += ',';
    many += R"({"name":"t)" + std::to_string(i) + R"(","description":"d","input_schema":{}})";
  }
  many += "]}";
  EXPECT_EQ(reason(many.c_str()), "too_many_declared_tools");
  EXPECT_EQ(reason(R"({"tools":[{"name":"a:b","description":"d","input_schema":{}}]})"), "invalid_declared_tool_name");
  EXPECT_EQ(reason((R"({"tools":[{"name":")" + std::string(129, 'n') + R"(","description":"d","input_schema":{}}]})").c_str()),
            "invalid_declared_tool_name");
  EXPECT_EQ(reason(R"({"tools":[{"name":"a","description":"  ","input_schema":{}}]})"), "invalid_declared_tool_description");
  EXPECT_EQ(reason(R"({"tools":[{"name":"a","description":"d","input_schema":[]}]})"), "declared_tool_schema_not_object");
  EXPECT_EQ(reason((R"({"tools":[{"name":"a","description":"d","input_schema":{"x":")" + std::string(70'000, 'x') + R"("}}]})").c_str()),
            "oversized_declared_tool_schema");
  EXPECT_EQ(reason((std::string(R"({"tools":[)") + k_tool + "," + k_tool + "]}").c_str()), "duplicate_declared_tool_name");
  EXPECT_EQ(reason(R"({"providers":[{"id":"p","display_name":"P","description":"d","models":[]}]})"),
            "invalid_declared_provider_model_count");
  EXPECT_EQ(reason(R"({"providers":[{"id":"p","display_name":"P","description":"d","models":[{"id":"m","capabilities":{"tool_use":"yes"}}]}]})"),
            "invalid_declared_provider_model_capabilities");
  EXPECT_EQ(reason(R"({"providers":[{"id":"p","description":"d","models":[{"id":"m"}]}]})"),
            "invalid_declared_provider_display_name");
  EXPECT_EQ(reason(R"({"context_providers":[{"id":"c","capability":"s","description":"d","schema_version":0}]})"),
            "invalid_declared_context_provider_schema_version");
}

TEST(DeferredDeclarations, LifecycleAndPermissionRules) {
  EXPECT_EQ(reason((std::string(R"({"lifecycle":"user","tools":[)") + k_tool + "]}").c_str()),
            "user_lifecycle_conflicts_with_active_capabilities");
  EXPECT_EQ(reason((std::string(R"({"tools":[)") + k_tool + "]}").c_str(), PermissionSet{}),
            "deferred_tools_require_tools_register_permission");
  EXPECT_EQ(reason((std::string(R"({"providers":[)") + k_provider + "]}").c_str(), PermissionSet{}),
            "deferred_providers_require_providers_register_permission");
  EXPECT_EQ(reason(R"({"lifecycle":"hook"})"), "hook_lifecycle_requires_hook_subscriptions");
  EXPECT_EQ(reason(R"({"lifecycle":"hook"})", all_registrations(), true), std::nullopt);
}

}  // namespace
}  // namespace exthost::host

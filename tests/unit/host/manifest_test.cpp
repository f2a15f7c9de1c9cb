#include "host/manifest.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#include "../../support/hostile_files.hpp"

namespace exthost::host {
namespace {

namespace fs = std::filesystem;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-manifest-" + std::to_string(::getpid()));
    dir = root / "my-plugin";
    fs::create_directories(dir / ".synaps-plugin");
  }
  void TearDown() override { fs::remove_all(root); }
  void write(const std::string& text) { std::ofstream(dir / k_manifest_path) << text; }
  std::string error() {
    auto m = read_manifest(dir);
    return m.ok() ? std::string("(ok)") : m.error().message;
  }
  fs::path root, dir;
};

TEST_F(ManifestTest, ReadsTheProcessFields) {
  write(R"({"extension":{"protocol_version":1,"runtime":"process","command":"python3","args":["ext.py","-v"],"permissions":["tools.register"]}})");
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE(m->has_value());
  const Manifest& x = **m;
  EXPECT_EQ(x.id, "my-plugin");
  EXPECT_EQ(x.command, "python3");
  EXPECT_EQ(x.args, (std::vector<std::string>{"ext.py", "-v"}));
  EXPECT_EQ(x.permissions, std::vector<std::string>{"tools.register"});
  EXPECT_EQ(x.protocol_version, 1u);
}

TEST_F(ManifestTest, APluginWithoutAnExtensionBlockIsNotAnExtension) {
  write(R"({"name":"docs-only"})");
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->has_value());
}

TEST_F(ManifestTest, ReportsTheReferenceTexts) {
  fs::remove(dir / k_manifest_path);
  EXPECT_EQ(error(), "Failed to read plugin manifest: No such file or directory (os error 2)");
  write("{not json");
  EXPECT_EQ(error().rfind("Invalid plugin manifest JSON: ", 0), 0u) << error();
  write(R"({"extension":{"runtime":"wasm","command":"x"}})");
  EXPECT_EQ(error(), "Failed to parse extension manifest: unknown variant `wasm`, expected `process`");
  write(R"({"extension":{"runtime":"Process","command":"x"}})");
  EXPECT_EQ(error(), "Failed to parse extension manifest: unknown variant `Process`, expected `process`");
  write(R"({"extension":{"command":"x"}})");
  EXPECT_EQ(error(), "Failed to parse extension manifest: missing field `runtime`");
  write(R"({"extension":{"runtime":"process"}})");
  EXPECT_EQ(error(), "Failed to parse extension manifest: missing field `command`");
  write(R"({"extension":{"protocol_version":2,"runtime":"process","command":"x","permissions":["tools.register"]}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' uses unsupported protocol_version 2 (supported: 1)");
  write(R"({"extension":{"runtime":"process","command":"   ","permissions":["tools.register"]}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' has empty command");
}

TEST_F(ManifestTest, ResolvesTheCommandAndArgumentsAgainstThePluginDirectory) {
  std::ofstream(dir / "ext.py") << "";
  write(R"({"extension":{"runtime":"process","command":"bin/ext","args":["ext.py","--flag","../outside"],"permissions":["tools.register"]}})");
  std::ofstream(root / "outside") << "";
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok() && m->has_value());
  const fs::path canonical_dir = fs::canonical(dir);
  EXPECT_EQ(resolve_command(**m), (fs::absolute(dir) / "bin/ext").lexically_normal().string());
  EXPECT_EQ(resolve_args(**m),
            (std::vector<std::string>{(canonical_dir / "ext.py").string(), "--flag", "../outside"}));
  write(R"({"extension":{"runtime":"process","command":"python3","permissions":["memory.read"]}})");
  EXPECT_EQ(resolve_command(**read_manifest(dir)), "python3");
  write(R"({"extension":{"runtime":"process","command":"/usr/bin/env","permissions":["memory.read"]}})");
  EXPECT_EQ(resolve_command(**read_manifest(dir)), "/usr/bin/env");
}

TEST_F(ManifestTest, ValidatesInTheReferenceOrder) {
  const std::string head = R"({"extension":{"runtime":"process","command":"x",)";
  write(head + R"("permissions":["tools.intercept"]}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' must subscribe to at least one hook or request a registration permission");
  write(head + R"("permissions":["tools.register"],"theme_tokens":{"bad.name":"#fff"}}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' theme token 'bad.name' is invalid: token names must be non-empty and must "
                     "not contain dots, slashes, or spaces");
  for (const char* colour : {"red", "#12345", "#gggggg", "22d3ee", "#"}) {
    write(head + R"("permissions":["tools.register"],"theme_tokens":{"accent":")" + colour + R"("}}})");
    EXPECT_EQ(error(), std::string("Extension 'my-plugin' theme token 'accent' has invalid color '") + colour +
                           "': expected '#rgb' or '#rrggbb' hex");
  }
  write(head + R"("permissions":["tools.register"],"theme_tokens":{"accent":" #22d3ee ","dim":"#abc"}}})");
  EXPECT_EQ(error(), "(ok)");
  write(head + R"("permissions":["tools.register","tools.typo"]}})");
  EXPECT_EQ(error(), "Unknown extension permission: tools.typo");
  write(head + R"("permissions":["tools.register","tools.override"]}})");
  EXPECT_EQ(error(), "Reserved extension permission is not implemented yet: tools.override");
  write(head + R"("permissions":["tools.intercept"],"hooks":[{"hook":"BeforeToolCall"}]}})");
  EXPECT_EQ(error(), "Unknown hook kind: 'BeforeToolCall' in extension 'my-plugin'");
  write(head + R"("permissions":["tools.register"],"hooks":[{"hook":"before_tool_call"}]}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' lacks permission 'tools.intercept' required for hook 'before_tool_call'");
  write(head + R"("permissions":["privacy.llm_content"],"hooks":[{"hook":"before_message","tool":"bash"}]}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' hook 'before_message' does not allow a tool filter");
  write(head + R"("permissions":["tools.intercept"],"hooks":[{"hook":"before_tool_call","match":{"input_startswith":"x"}}]}})");
  EXPECT_EQ(error().rfind("Failed to parse extension manifest: unknown field `input_startswith`", 0), 0u) << error();
}

TEST_F(ManifestTest, KeepsHookSubscriptionsWithTheirFilters) {
  write(R"({"extension":{"runtime":"process","command":"x","permissions":["tools.intercept","session.lifecycle"],
    "hooks":[{"hook":"before_tool_call","tool":"bash","match":{"input_contains":"rm -rf","input_equals":{"a":1}}},
             {"hook":"on_session_end"}]}})");
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto& hooks = (*m)->hooks;
  ASSERT_EQ(hooks.size(), 2u);
  EXPECT_EQ(hooks[0].kind, protocol::HookKind::before_tool_call);
  EXPECT_EQ(hooks[0].tool, std::optional<std::string>("bash"));
  EXPECT_EQ(hooks[0].input_contains, std::optional<std::string>("rm -rf"));
  ASSERT_TRUE(hooks[0].input_equals);
  EXPECT_EQ(hooks[1].kind, protocol::HookKind::on_session_end);
  EXPECT_FALSE(hooks[1].tool);
  EXPECT_TRUE((*m)->granted.has(Permission::session_lifecycle));
  EXPECT_FALSE((*m)->granted.has(Permission::tools_register));
}

TEST_F(ManifestTest, ReadsConfigEntriesWithTheirOptionalFields) {
  write(R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"],"config":[
    {"key":"endpoint","type":"string","description":"Where","required":true,"default":"http://127.0.0.1:8080",
     "secret_env":"MY_TOKEN"},{"key":"root","host_context":"project_root"},{"key":"plain"}]}})");
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const auto& c = (*m)->config;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].type, std::optional<std::string>("string"));
  EXPECT_TRUE(c[0].required);
  EXPECT_EQ(c[0].default_value, std::optional<boost::json::value>(boost::json::value("http://127.0.0.1:8080")));
  EXPECT_EQ(c[0].secret_env, std::optional<std::string>("MY_TOKEN"));
  EXPECT_TRUE(c[1].from_project_root);
  EXPECT_FALSE(c[2].type);
  EXPECT_FALSE(c[2].required);
  write(R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"],"config":[{"key":"k","type":"list"}]}})");
  EXPECT_EQ(error(), "Failed to parse extension manifest: unknown variant `list`, expected one of `string`, `bool`, `number`");
}

TEST_F(ManifestTest, PrebuiltAssetsNeedBothUrlAndSha256) {
  write(R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"],
            "prebuilt":{"x86_64-unknown-linux-gnu":{"url":"https://example.org/bin.tar.gz","sha256":"ab12"}}}})");
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ((*m)->prebuilt.size(), 1u);
  EXPECT_EQ(std::get<1>((*m)->prebuilt[0]), "https://example.org/bin.tar.gz");
  write(R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"],
            "prebuilt":{"x86_64-unknown-linux-gnu":{"url":"https://example.org/bin.tar.gz"}}}})");
  EXPECT_EQ(error(), "Failed to parse extension manifest: missing field `sha256`");
}

TEST_F(ManifestTest, DeferredDeclarationsAreValidatedFirstAndKept) {
  // Step 1 comes before the protocol version check (step 2).
  write(R"({"extension":{"protocol_version":999,"runtime":"process","command":"x","permissions":["memory.read"],
            "deferred":{"tools":[{"name":"echo","description":"Echo","input_schema":{}}]}}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' deferred declarations invalid: deferred_tools_require_tools_register_permission");
  write(R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"],
            "deferred":{"tools":[{"name":"echo","description":"Echo","input_schema":{}}]}}})");
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_TRUE((*m)->deferred);
  EXPECT_EQ((*m)->deferred->tools.size(), 1u);
}

// A manifest comes from outside: it must not block, flood or bloat the host that reads it.
TEST_F(ManifestTest, AFifoManifestFailsAtOnceAndSaysWhatItIs) {
  const fs::path path = dir / k_manifest_path;
  exthost::testing::make_fifo(path);
  const std::string e = exthost::testing::read_beside_fifo(path, [&] { return error(); });
  EXPECT_EQ(e, "Failed to read plugin manifest: " + path.string() + " is not a regular file (a FIFO)");
}

TEST_F(ManifestTest, AManifestLinkedToDevZeroIsRefused) {
  const fs::path path = dir / k_manifest_path;
  exthost::testing::link_to_dev_zero(path);
  exthost::testing::AddressSpaceHeadroom bounded;
  EXPECT_EQ(error(), "Failed to read plugin manifest: " + path.string() + " is not a regular file (a character device)");
}

TEST_F(ManifestTest, AManifestOverTheCapIsRefusedWithTheCapInTheMessage) {
  // Valid JSON and a valid extension, only too large.
  const fs::path path = dir / k_manifest_path;
  exthost::testing::write_padded(
      path, R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"]},"pad":")",
      2 * k_max_manifest_bytes, 'p', R"("})");
  EXPECT_EQ(error(), "Failed to read plugin manifest: " + path.string() +
                         " is 2097152 bytes, over the cap of 1048576 bytes (1 MiB)");
  exthost::testing::write_padded(
      path, R"({"extension":{"runtime":"process","command":"x","permissions":["tools.register"]},"pad":")",
      k_max_manifest_bytes, 'p', R"("})");
  EXPECT_EQ(error(), "(ok)") << "a manifest of exactly the cap is read";
}

}  // namespace
}  // namespace exthost::host

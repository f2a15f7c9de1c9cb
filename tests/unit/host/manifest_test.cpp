#include "host/manifest.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

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
  write(R"({"extension":{"protocol_version":2,"runtime":"process","command":"x"}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' uses unsupported protocol_version 2 (supported: 1)");
  write(R"({"extension":{"runtime":"process","command":"   "}})");
  EXPECT_EQ(error(), "Extension 'my-plugin' has empty command");
}

TEST_F(ManifestTest, ResolvesTheCommandAndArgumentsAgainstThePluginDirectory) {
  std::ofstream(dir / "ext.py") << "";
  write(R"({"extension":{"runtime":"process","command":"bin/ext","args":["ext.py","--flag","../outside"]}})");
  std::ofstream(root / "outside") << "";
  auto m = read_manifest(dir);
  ASSERT_TRUE(m.ok() && m->has_value());
  const fs::path canonical_dir = fs::canonical(dir);
  EXPECT_EQ(resolve_command(**m), (fs::absolute(dir) / "bin/ext").lexically_normal().string());
  EXPECT_EQ(resolve_args(**m),
            (std::vector<std::string>{(canonical_dir / "ext.py").string(), "--flag", "../outside"}));
  write(R"({"extension":{"runtime":"process","command":"python3"}})");
  EXPECT_EQ(resolve_command(**read_manifest(dir)), "python3");
  write(R"({"extension":{"runtime":"process","command":"/usr/bin/env"}})");
  EXPECT_EQ(resolve_command(**read_manifest(dir)), "/usr/bin/env");
}

}  // namespace
}  // namespace exthost::host

// A hook subscription's `on_error` in the manifest: "continue" (the default), "block", and
// nothing else.
#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

#include "host/manifest.hpp"

namespace exthost::host {
namespace {

namespace fs = std::filesystem;

class ManifestOnErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("exthost-on-error-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    dir = root / "guard";
    fs::create_directories(dir / ".synaps-plugin");
  }
  void TearDown() override { fs::remove_all(root); }
  // A manifest whose only hook entry is `entry` (JSON object text).
  Result<std::optional<Manifest>> read_with(const std::string& entry) {
    std::ofstream(dir / k_manifest_path) << R"({"extension":{"runtime":"process","command":"x",)"
                                         << R"("permissions":["tools.intercept","session.lifecycle"],"hooks":[)" << entry
                                         << "]}}";
    return read_manifest(dir);
  }
  fs::path root, dir;
};

TEST_F(ManifestOnErrorTest, ContinueIsTheDefaultAndBothValuesAreRead) {
  auto absent = read_with(R"({"hook":"before_tool_call"})");
  ASSERT_TRUE(absent.ok()) << absent.error().message;
  EXPECT_EQ((*absent)->hooks.at(0).on_error, HookOnError::continue_chain);

  auto null = read_with(R"({"hook":"before_tool_call","on_error":null})");
  ASSERT_TRUE(null.ok()) << null.error().message;
  EXPECT_EQ((*null)->hooks.at(0).on_error, HookOnError::continue_chain);

  auto cont = read_with(R"({"hook":"before_tool_call","on_error":"continue"})");
  ASSERT_TRUE(cont.ok()) << cont.error().message;
  EXPECT_EQ((*cont)->hooks.at(0).on_error, HookOnError::continue_chain);

  auto block = read_with(R"({"hook":"before_tool_call","tool":"bash","on_error":"block"},{"hook":"on_session_end"})");
  ASSERT_TRUE(block.ok()) << block.error().message;
  const auto& hooks = (*block)->hooks;
  ASSERT_EQ(hooks.size(), 2u);
  EXPECT_EQ(hooks[0].on_error, HookOnError::block);
  EXPECT_EQ(hooks[0].tool, std::optional<std::string>("bash"));
  EXPECT_EQ(hooks[1].on_error, HookOnError::continue_chain) << "each entry has its own";
}

TEST_F(ManifestOnErrorTest, AKindThatCannotBlockMayStillAskToFailClosed) {
  auto r = read_with(R"({"hook":"on_session_end","on_error":"block"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->hooks.at(0).on_error, HookOnError::block);
}

TEST_F(ManifestOnErrorTest, AnyOtherValueIsAManifestErrorNamingTheField) {
  auto bad = read_with(R"({"hook":"before_tool_call","on_error":"ignore"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::manifest);
  EXPECT_EQ(bad.error().message,
            "Failed to parse extension manifest: unknown variant `ignore` for `on_error`, expected `continue` or `block`");

  auto cased = read_with(R"({"hook":"before_tool_call","on_error":"Block"})");
  ASSERT_FALSE(cased.ok());
  EXPECT_EQ(cased.error().message,
            "Failed to parse extension manifest: unknown variant `Block` for `on_error`, expected `continue` or `block`");

  auto typed = read_with(R"({"hook":"before_tool_call","on_error":true})");
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.error().message, "Failed to parse extension manifest: invalid type for `on_error`, expected a string");
}

TEST_F(ManifestOnErrorTest, ALongBadValueIsRepeatedOnlyInPart) {
  const std::string value(10'000, 'z');
  auto bad = read_with(R"({"hook":"before_tool_call","on_error":")" + value + R"("})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "Failed to parse extension manifest: unknown variant `" + std::string(64, 'z') +
                                     "\xE2\x80\xA6` for `on_error`, expected `continue` or `block`");
}

}  // namespace
}  // namespace exthost::host

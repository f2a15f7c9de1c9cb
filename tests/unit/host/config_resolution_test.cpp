// Configuration resolution and its diagnostics (SPEC §8.10's config.rs tests, §8.15's
// resolve_config tests, A1's EXTHOST_ names).
#include "host/config_resolution.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "../../support/hostile_files.hpp"
#include "host/home.hpp"

namespace exthost::host {
namespace {

namespace fs = std::filesystem;

class ConfigResolutionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-cfgres-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  ConfigSources sources() {
    ConfigSources s;
    s.env = [this](const std::string& n) -> std::optional<std::string> {
      auto it = m_env.find(n);
      return it == m_env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    s.plugin_config_file = m_dir / "plugins" / "my-ext" / "config";
    s.host_config_file = m_dir / "config";
    return s;
  }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  static ConfigEntry entry(std::string key) {
    ConfigEntry e;
    e.key = std::move(key);
    return e;
  }
  ConfigSourceKind source_of(const ConfigEntry& e) {
    return diagnose_config("my-ext", {e}, sources(), {}).entries.at(0).source.kind;
  }
  fs::path m_dir;
  std::map<std::string, std::string> m_env;
};

TEST(ConfigRedaction, FollowsTheReferenceLengths) {
  EXPECT_EQ(redact_secret_value(""), "");
  EXPECT_EQ(redact_secret_value("abc"), "***");
  EXPECT_EQ(redact_secret_value("abcd"), "***cd");
  EXPECT_EQ(redact_secret_value("abc1234"), "***34");
  EXPECT_EQ(redact_secret_value("abc12345"), "***2345");
}

TEST(ConfigEnvName, UppercasesAndReplacesDashes) {
  EXPECT_EQ(env_override_name("SYNAPS_", "my-ext", "api-key"), "SYNAPS_EXTENSION_MY_EXT_API_KEY");
  EXPECT_EQ(env_override_name("EXTHOST_", "my-ext", "api-key"), "EXTHOST_EXTENSION_MY_EXT_API_KEY");
  EXPECT_EQ(env_override_name("SYNAPS_", "a.b", "k"), "SYNAPS_EXTENSION_A.B_K");
}

TEST_F(ConfigResolutionTest, ClassifiesEverySourceInOrder) {
  ConfigEntry e = entry("token");
  e.secret_env = "MY_TOKEN";
  e.default_value = boost::json::value("fallback");
  EXPECT_EQ(source_of(e), ConfigSourceKind::default_value);
  write(m_dir / "config", "extension.my-ext.token = legacy\n");
  EXPECT_EQ(source_of(e), ConfigSourceKind::legacy_config_key);
  write(m_dir / "plugins" / "my-ext" / "config", "token = plugin\n");
  EXPECT_EQ(source_of(e), ConfigSourceKind::plugin_config);
  m_env["MY_TOKEN"] = "secret";
  EXPECT_EQ(source_of(e), ConfigSourceKind::secret_env);
  m_env["SYNAPS_EXTENSION_MY_EXT_TOKEN"] = "synaps";
  EXPECT_EQ(source_of(e), ConfigSourceKind::env_override);
  EXPECT_EQ(diagnose_config("my-ext", {e}, sources(), {}).entries[0].source.detail, "SYNAPS_EXTENSION_MY_EXT_TOKEN");
  m_env["EXTHOST_EXTENSION_MY_EXT_TOKEN"] = "exthost";
  auto resolved = resolve_config("my-ext", {e}, sources());
  ASSERT_TRUE(resolved);
  EXPECT_EQ(boost::json::serialize(*resolved), R"({"token":"exthost"})");
  EXPECT_EQ(source_of(entry("absent")), ConfigSourceKind::missing);
}

TEST_F(ConfigResolutionTest, PluginConfigWinsOverTheLegacyGlobalKeyWhichStaysAFallback) {
  write(m_dir / "config", "extension.my-ext.endpoint = http://legacy\nextension.my-ext.mode = legacy-mode\n");
  write(m_dir / "plugins" / "my-ext" / "config", "endpoint = http://plugin\n");
  auto r = resolve_config("my-ext", {entry("endpoint"), entry("mode")}, sources());
  ASSERT_TRUE(r);
  EXPECT_EQ(boost::json::serialize(*r), R"({"endpoint":"http://plugin","mode":"legacy-mode"})");
}

TEST_F(ConfigResolutionTest, DefaultsKeepTheirJsonTypeAndOptionalMissingEntriesAreOmitted) {
  ConfigEntry n = entry("threads");
  n.default_value = boost::json::value(4);
  auto r = resolve_config("my-ext", {n, entry("optional")}, sources());
  ASSERT_TRUE(r);
  EXPECT_EQ(boost::json::serialize(*r), R"({"threads":4})");
}

TEST_F(ConfigResolutionTest, MissingRequiredValuesNameTheKeyAndTheHint) {
  ConfigEntry e = entry("endpoint");
  e.required = true;
  auto r = resolve_config("my-ext", {e}, sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::manifest);
  EXPECT_EQ(r.error().message,
            "Extension 'my-ext' missing required config 'endpoint': set config key 'extension.my-ext.endpoint'");
  e.secret_env = "EP_TOKEN";
  EXPECT_EQ(resolve_config("my-ext", {e}, sources()).error().message,
            "Extension 'my-ext' missing required config 'endpoint': set environment variable 'EP_TOKEN' or config key "
            "'extension.my-ext.endpoint'");
}

TEST_F(ConfigResolutionTest, BadKeysAreRefused) {
  EXPECT_EQ(resolve_config("my-ext", {entry("  ")}, sources()).error().message,
            "Extension 'my-ext' declares config with empty key");
  for (const char* k : {"a.b", "a/b", "a b"}) {
    EXPECT_EQ(resolve_config("my-ext", {entry(k)}, sources()).error().message,
              "Extension 'my-ext' config key '" + std::string(k) + "' must not contain dots, slashes, or spaces");
  }
}

TEST_F(ConfigResolutionTest, ProjectRootComesOnlyFromTheHost) {
  ConfigEntry e = entry("root");
  e.from_project_root = true;
  m_env["EXTHOST_EXTENSION_MY_EXT_ROOT"] = "/evil";
  write(m_dir / "plugins" / "my-ext" / "config", "root = /also-evil\n");
  EXPECT_EQ(boost::json::serialize(*resolve_config("my-ext", {e}, sources())), "{}");
  ConfigSources s = sources();
  s.project_root = "/srv/project";
  EXPECT_EQ(boost::json::serialize(*resolve_config("my-ext", {e}, s)), R"({"root":"/srv/project"})");
}

TEST_F(ConfigResolutionTest, DiagnosticsRedactSecretsAndReportProviderKeysNobodySupplies) {
  ConfigEntry secret = entry("api_key");
  secret.secret_env = "MY_TOKEN";
  ConfigEntry plain = entry("endpoint");
  plain.default_value = boost::json::value("http://x");
  m_env["MY_TOKEN"] = "sk-live-12345678";
  auto d = diagnose_config("my-ext", {secret, plain}, sources(),
                           {{"my-ext:llm", {"api_key", "endpoint", "region"}}});
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entries[0].display_value, std::optional<std::string>("***5678"));
  EXPECT_EQ(d.entries[1].display_value, std::optional<std::string>("http://x"));
  ASSERT_EQ(d.provider_missing.size(), 1u);
  EXPECT_EQ(d.provider_missing[0], (std::pair<std::string, std::string>{"my-ext:llm", "region"}));
}

TEST(Home, FollowsExthostHomeThenXdgDataHomeThenHome) {
  std::map<std::string, std::string> env{{"HOME", "/h"}};
  auto lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  EXPECT_EQ(resolve_home(lookup), fs::path("/h/.local/share/exthost"));
  env["XDG_DATA_HOME"] = "/xdg";
  EXPECT_EQ(resolve_home(lookup), fs::path("/xdg/exthost"));
  env["EXTHOST_HOME"] = "/custom";
  EXPECT_EQ(resolve_home(lookup), fs::path("/custom"));
  env["EXTHOST_HOME"] = "";
  EXPECT_EQ(resolve_home(lookup), fs::path("/xdg/exthost"));
}

// A config file that cannot be read safely fails the resolution that needs it: the
// configuration is never guessed, and the host never waits on it or loads it whole.
TEST_F(ConfigResolutionTest, AFifoPluginConfigFailsTheResolutionAtOnce) {
  const auto file = m_dir / "plugins" / "my-ext" / "config";
  exthost::testing::make_fifo(file);
  auto r = exthost::testing::read_beside_fifo(file, [&] { return resolve_config("my-ext", {entry("token")}, sources()); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::manifest);
  EXPECT_EQ(r.error().message, "Extension 'my-ext' cannot resolve config 'token': config io error: " + file.string() +
                                   " is not a regular file (a FIFO)");
}

TEST_F(ConfigResolutionTest, AHostConfigLinkedToDevZeroFailsTheResolution) {
  exthost::testing::link_to_dev_zero(m_dir / "config");
  exthost::testing::AddressSpaceHeadroom bounded;
  auto r = resolve_config("my-ext", {entry("token")}, sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Extension 'my-ext' cannot resolve config 'token': config io error: " +
                                   (m_dir / "config").string() + " is not a regular file (a character device)");
}

TEST_F(ConfigResolutionTest, APluginConfigOverTheCapFailsTheResolutionWithTheCap) {
  const auto file = m_dir / "plugins" / "my-ext" / "config";
  exthost::testing::write_padded(file, "token = t\n# ", 2 * 1024 * 1024, '#', "\n");
  auto r = resolve_config("my-ext", {entry("token")}, sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Extension 'my-ext' cannot resolve config 'token': config io error: " + file.string() +
                                   " is 2097152 bytes, over the cap of 1048576 bytes (1 MiB)");
}

TEST_F(ConfigResolutionTest, ALinkInPlaceOfThePluginStoreIsRefusedTheHostFileMayBeALink) {
  write(m_dir / "real-config", "token = linked\nextension.my-ext.mode = linked-mode\n");
  fs::create_directories(m_dir / "plugins" / "my-ext");
  fs::create_symlink(m_dir / "real-config", m_dir / "config");
  auto r = resolve_config("my-ext", {entry("mode")}, sources());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(boost::json::serialize(*r), R"({"mode":"linked-mode"})");
  fs::create_symlink(m_dir / "real-config", m_dir / "plugins" / "my-ext" / "config");
  r = resolve_config("my-ext", {entry("token")}, sources());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "Extension 'my-ext' cannot resolve config 'token': config io error: " +
                                   (m_dir / "plugins" / "my-ext" / "config").string() +
                                   " is a symbolic link (links are not followed here)");
}

TEST_F(ConfigResolutionTest, DiagnosticsShowARefusedFileAsNoValueAndSayWhy) {
  exthost::testing::make_fifo(m_dir / "config");
  ConfigEntry e = entry("token");
  e.default_value = boost::json::value("fallback");
  const auto d = diagnose_config("my-ext", {e, entry("other")}, sources(), {});
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_FALSE(d.entries[0].has_value);
  EXPECT_EQ(d.entries[0].source.kind, ConfigSourceKind::missing);
  ASSERT_EQ(d.file_errors.size(), 2u);
  EXPECT_EQ(d.file_errors[0], "config io error: " + (m_dir / "config").string() + " is not a regular file (a FIFO)");
}

}  // namespace
}  // namespace exthost::host

// The `key = value` config files (SPEC §8.10's config_store tests).
#include "store/config_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace exthost::store {
namespace {

namespace fs = std::filesystem;

class ConfigStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-config-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path m_dir;
};

TEST_F(ConfigStoreTest, ReadsTheExactKeyFromThePluginFile) {
  const auto file = m_dir / "plugins" / "p" / "config";
  write(file, "# comment = no\nbackend_extra = gpu\n  backend =  cpu  \nbackend = second\nnoequals\n");
  EXPECT_EQ(read_config_value(file, "backend"), std::optional<std::string>("cpu"));
  EXPECT_EQ(read_config_value(file, "backend_extra"), std::optional<std::string>("gpu"));
  EXPECT_EQ(read_config_value(file, "# comment"), std::nullopt);
  EXPECT_EQ(read_config_value(file, "missing"), std::nullopt);
  EXPECT_EQ(read_config_value(m_dir / "absent", "backend"), std::nullopt);
}

TEST_F(ConfigStoreTest, WriteReplacesTheFirstLineOfTheKeyAndPreservesComments) {
  const auto file = m_dir / "config";
  write(file, "# keep me\nmode = fast\n\nother = 1\nmode = shadow\n");
  ASSERT_TRUE(write_config_value(file, "mode", "  safe  "));
  EXPECT_EQ(read(file), "# keep me\nmode = safe\n\nother = 1\nmode = shadow\n");
}

TEST_F(ConfigStoreTest, WriteCreatesTheFolderAppendsAMissingKeyAndIs0600) {
  const auto file = m_dir / "plugins" / "config-test-ext" / "config";
  const mode_t old = ::umask(0);
  ASSERT_TRUE(write_config_value(file, "backend", "cpu"));
  ASSERT_TRUE(write_config_value(file, "threads", "4"));
  ::umask(old);
  EXPECT_EQ(read(file), "backend = cpu\nthreads = 4\n");
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(file.parent_path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(ConfigStoreTest, ParseSkipsCommentsBlanksAndLinesWithoutEquals) {
  auto pairs = parse_config_text("a = 1\n# b = 2\n\n c=3=4 \njunk\n");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(pairs[1], (std::pair<std::string, std::string>{"c", "3=4"}));
}

}  // namespace
}  // namespace exthost::store

// The `key = value` config files (SPEC §8.10's config_store tests).
#include "store/config_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "../../support/hostile_files.hpp"

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

// Config files come from outside too: a FIFO, a device or a huge file is never loaded. A
// reader that cannot fail reads such a file as absent; a writer fails.
TEST_F(ConfigStoreTest, AFifoConfigFileIsNeitherWaitedForNorRead) {
  const auto file = m_dir / "plugins" / "p" / "config";
  exthost::testing::make_fifo(file);
  auto value = exthost::testing::read_beside_fifo(file, [&] { return read_config_value(file, "backend"); });
  EXPECT_EQ(value, std::nullopt);
  auto written = exthost::testing::read_beside_fifo(file, [&] { return write_config_value(file, "backend", "cpu"); });
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message, "config io error: " + file.string() + " is not a regular file (a FIFO)");
}

TEST_F(ConfigStoreTest, AConfigFileLinkedToDevZeroIsNotRead) {
  const auto file = m_dir / "config";
  exthost::testing::link_to_dev_zero(file);
  exthost::testing::AddressSpaceHeadroom bounded;
  EXPECT_EQ(read_config_value(file, "backend"), std::nullopt);
}

TEST_F(ConfigStoreTest, AConfigFileOverTheCapIsNotRead) {
  const auto file = m_dir / "config";
  exthost::testing::write_padded(file, "backend = cpu\n# ", 2 * 1024 * 1024, '#', "\n");
  EXPECT_EQ(read_config_value(file, "backend"), std::nullopt);
  auto written = write_config_value(file, "backend", "gpu");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message,
            "config io error: " + file.string() + " is 2097152 bytes, over the cap of 1048576 bytes (1 MiB)");
}

TEST_F(ConfigStoreTest, TheStrictReaderNamesEachRefusal) {
  const auto fifo = m_dir / "fifo";
  exthost::testing::make_fifo(fifo);
  auto r = find_config_value(fifo, "backend");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "config io error: " + fifo.string() + " is not a regular file (a FIFO)");
  const auto zero = m_dir / "zero";
  exthost::testing::link_to_dev_zero(zero);
  r = find_config_value(zero, "backend");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "config io error: " + zero.string() + " is not a regular file (a character device)");
  const auto big = m_dir / "big";
  exthost::testing::write_padded(big, "backend = cpu\n# ", k_max_config_file_bytes + 1, '#', "\n");
  r = find_config_value(big, "backend");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "config io error: " + big.string() + " is 1048577 bytes, over the cap of 1048576 bytes (1 MiB)");
  const auto absent = find_config_value(m_dir / "absent", "backend");
  ASSERT_TRUE(absent);
  EXPECT_EQ(*absent, std::nullopt);
}

TEST_F(ConfigStoreTest, ALinkInPlaceOfTheFileIsFollowedOnlyWhenAllowed) {
  const auto target = m_dir / "elsewhere";
  write(target, "backend = linked\n");
  const auto file = m_dir / "plugins" / "p" / "config";
  fs::create_directories(file.parent_path());
  fs::create_symlink(target, file);
  EXPECT_EQ(find_config_value(file, "backend").value(), std::optional<std::string>("linked"));
  auto refused = find_config_value(file, "backend", util::Symlinks::refuse);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "config io error: " + file.string() + " is a symbolic link (links are not followed here)");
  ASSERT_FALSE(write_config_value(file, "backend", "cpu", util::Symlinks::refuse));
  EXPECT_EQ(read(target), "backend = linked\n");
}

}  // namespace
}  // namespace exthost::store

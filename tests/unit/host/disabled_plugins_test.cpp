// The host config file's list of plugins that discovery skips.
#include "host/disabled_plugins.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "../../support/hostile_files.hpp"

namespace exthost::host {
namespace {

namespace fs = std::filesystem;

class DisabledPluginsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-disabled-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path m_dir;
};

TEST_F(DisabledPluginsTest, ListsTrimmedNamesAndNothingWhenAbsent) {
  std::ofstream(m_dir / "config") << "# host\ndisabled_plugins =  a, ,b ,c\n";
  auto listed = read_disabled_plugins(m_dir / "config");
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(*listed, (std::vector<std::string>{"a", "b", "c"}));
  auto none = read_disabled_plugins(m_dir / "absent");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
}

TEST_F(DisabledPluginsTest, ARefusedHostConfigIsAnErrorNotAnEmptyList) {
  exthost::testing::make_fifo(m_dir / "config");
  auto listed = read_disabled_plugins(m_dir / "config");
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message, "config io error: " + (m_dir / "config").string() + " is not a regular file (a FIFO)");
}

}  // namespace
}  // namespace exthost::host

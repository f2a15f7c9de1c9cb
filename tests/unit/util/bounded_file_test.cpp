// The reader for files the host did not write: regular files only, never blocking, capped.
#include "util/bounded_file.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "../../support/hostile_files.hpp"

namespace exthost::util {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t k_cap = 1024 * 1024;

std::string error_of(const Result<std::optional<std::string>>& r) { return r ? std::string("(ok)") : r.error().message; }

class BoundedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fs::temp_directory_path() / ("exthost-bounded-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_root);
    fs::create_directories(m_root);
  }
  void TearDown() override { fs::remove_all(m_root); }
  const fs::path& root() const { return m_root; }
  fs::path m_root;
};

TEST_F(BoundedFileTest, ReadsARegularFileWholeAndAFileOfExactlyTheCap) {
  const auto small = root() / "small";
  exthost::testing::write_padded(small, "key = ", 12, 'v', "\n");
  auto r = read_bounded_file(small, k_cap);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(**r, "key = vvvvv\n");
  const auto full = root() / "full";
  exthost::testing::write_padded(full, "", k_cap, 'x', "");
  auto whole = read_bounded_file(full, k_cap);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ((*whole)->size(), k_cap);
}

TEST_F(BoundedFileTest, AMissingFileIsAbsentNotAnError) {
  auto r = read_bounded_file(root() / "nothing-here", k_cap);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->has_value());
}

TEST_F(BoundedFileTest, AFifoIsRefusedAtOnceAndNamed) {
  const auto fifo = root() / "fifo";
  exthost::testing::make_fifo(fifo);
  auto r = exthost::testing::read_beside_fifo(fifo, [&] { return read_bounded_file(fifo, k_cap); });
  EXPECT_EQ(error_of(r), fifo.string() + " is not a regular file (a FIFO)");
}

TEST_F(BoundedFileTest, DevicesDirectoriesAndSocketsAreRefusedByKind) {
  const auto zero = root() / "zero";
  exthost::testing::link_to_dev_zero(zero);
  EXPECT_EQ(error_of(read_bounded_file(zero, k_cap)), zero.string() + " is not a regular file (a character device)");
  EXPECT_EQ(error_of(read_bounded_file(root(), k_cap)), root().string() + " is not a regular file (a directory)");
  const auto sock = root() / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // A socket file cannot be opened at all: the open fails and says so.
  EXPECT_NE(error_of(read_bounded_file(sock, k_cap)).find("cannot open " + sock.string() + ": "), std::string::npos);
  ::close(fd);
}

TEST_F(BoundedFileTest, AFileOverTheCapIsRefusedBeforeReadingWithTheCapInTheMessage) {
  const auto big = root() / "big";
  exthost::testing::write_padded(big, "", k_cap + 1, 'x', "");
  EXPECT_EQ(error_of(read_bounded_file(big, k_cap)),
            big.string() + " is 1048577 bytes, over the cap of 1048576 bytes (1 MiB)");
}

TEST_F(BoundedFileTest, AFileLongerThanItsReportedSizeStopsOneByteAfterTheCap) {
  // /proc files report a size of 0 and hold more: only reading finds out.
  const fs::path maps = "/proc/self/maps";
  auto whole = read_bounded_file(maps, k_cap);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_GT((*whole)->size(), 16u);
  EXPECT_EQ(error_of(read_bounded_file(maps, 16)), "/proc/self/maps grew past the cap of 16 bytes while being read");
}

TEST_F(BoundedFileTest, LinksAreFollowedUnlessRefused) {
  const auto target = root() / "target";
  exthost::testing::write_padded(target, "a = 1\n", 6, ' ', "");
  const auto link = root() / "link";
  fs::create_symlink(target, link);
  auto followed = read_bounded_file(link, k_cap);
  ASSERT_TRUE(followed) << followed.error().message;
  EXPECT_EQ(**followed, "a = 1\n");
  EXPECT_EQ(error_of(read_bounded_file(link, k_cap, Symlinks::refuse)),
            link.string() + " is a symbolic link (links are not followed here)");
  // A dangling link is nothing to read, like a missing file.
  fs::remove(target);
  auto dangling = read_bounded_file(link, k_cap);
  ASSERT_TRUE(dangling) << dangling.error().message;
  EXPECT_FALSE(dangling->has_value());
}

TEST_F(BoundedFileTest, FileKindsAreNamedAsTheErrorsPrintThem) {
  EXPECT_EQ(file_kind(S_IFIFO), "a FIFO");
  EXPECT_EQ(file_kind(S_IFREG), "a regular file");
  EXPECT_EQ(file_kind(S_IFBLK), "a block device");
  EXPECT_EQ(file_kind(S_IFSOCK), "a socket");
}

}  // namespace
}  // namespace exthost::util

// The memory store across processes: concurrent writers lose nothing, and a writer killed
// mid-append leaves a database that opens and holds every acknowledged record (A7).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "store/memory_store.hpp"

namespace exthost::store {
namespace {

namespace fs = std::filesystem;

struct Writer {
  pid_t pid = -1;
  FILE* out = nullptr;  // the writer's stdout: "ack <i>" lines
};

Writer start_writer(const fs::path& db, const std::string& ns, const std::string& prefix, long count) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(EXTHOST_MEMORY_WRITER, "memory_writer", db.c_str(), ns.c_str(), prefix.c_str(),
            std::to_string(count).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  return Writer{pid, ::fdopen(fds[0], "r")};
}

// Reads ack lines until EOF or `stop_after` acks; returns the acknowledged indexes.
std::set<long> read_acks(Writer& w, std::size_t stop_after) {
  std::set<long> acks;
  char line[64];
  while (acks.size() < stop_after && std::fgets(line, sizeof line, w.out)) {
    long i = -1;
    if (std::sscanf(line, "ack %ld", &i) == 1) acks.insert(i);
  }
  return acks;
}

int wait_exit(Writer& w) {
  int status = 0;
  ::waitpid(w.pid, &status, 0);
  std::fclose(w.out);
  return status;
}

class MemoryStoreProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("exthost-memproc-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path m_dir;
};

TEST_F(MemoryStoreProcessTest, TwoProcessesAppendingAThousandRecordsEachLoseNone) {
  const auto db = m_dir / "memory.db";
  Writer a = start_writer(db, "shared-ns", "a", 1000);
  Writer b = start_writer(db, "shared-ns", "b", 1000);
  EXPECT_EQ(read_acks(a, 1000).size(), 1000u);
  EXPECT_EQ(read_acks(b, 1000).size(), 1000u);
  const int sa = wait_exit(a), sb = wait_exit(b);
  ASSERT_TRUE(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
  ASSERT_TRUE(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);

  auto store = MemoryStore::open(db);
  ASSERT_TRUE(store);
  auto all = (*store)->query(MemoryQuery{"shared-ns", {}, {}, {}, {}, 10'000});
  ASSERT_TRUE(all);
  std::set<std::string> contents;
  for (const auto& r : all->records) contents.insert(r.content);
  EXPECT_EQ(all->records.size(), 2000u);
  EXPECT_EQ(contents.size(), 2000u);
  EXPECT_TRUE(contents.count("a-0") && contents.count("a-999") && contents.count("b-0") && contents.count("b-999"));
}

TEST_F(MemoryStoreProcessTest, AWriterKilledMidAppendLeavesAConsistentDatabaseWithEveryAcknowledgedRecord) {
  const auto db = m_dir / "memory.db";
  Writer w = start_writer(db, "killed-ns", "k", 1'000'000);
  const auto acked = read_acks(w, 200);
  ASSERT_EQ(acked.size(), 200u);
  ::kill(w.pid, SIGKILL);  // somewhere inside a later append
  const int status = wait_exit(w);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto store = MemoryStore::open(db);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ(*(*store)->integrity_check(), "ok");
  auto all = (*store)->query(MemoryQuery{"killed-ns", {}, {}, {}, {}, 10'000'000});
  ASSERT_TRUE(all);
  std::set<std::string> contents;
  for (const auto& r : all->records) contents.insert(r.content);
  for (long i : acked) EXPECT_TRUE(contents.count("k-" + std::to_string(i))) << "acknowledged record k-" << i << " lost";
  EXPECT_GE(all->records.size(), acked.size());
  // The store still takes appends.
  EXPECT_TRUE((*store)->append(MemoryRecord{"killed-ns", now_ms(), "after", {}, std::nullopt}));
}

}  // namespace
}  // namespace exthost::store

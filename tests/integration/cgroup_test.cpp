// Control-group bookkeeping with real groups and processes: a group's host is known to run
// by the lock it holds, not by its pid; a stale group in the way of a new name is removed;
// an extension left without a group says so.
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "../support/plugin_dir.hpp"
#include "../support/proc.hpp"
#include "exthost/host.hpp"
#include "process/cgroup.hpp"
#include "process/janitor.hpp"

namespace exthost {
namespace {

namespace fs = std::filesystem;

// Waits up to 10 s for `done`.
template <class F>
bool within_10s(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    ::usleep(10'000);
  }
  return done();
}

// A pid no process has here.
pid_t absent_pid() {
  for (pid_t p = 4'000'000; p > 1000; --p) {
    if (::kill(p, 0) != 0 && errno == ESRCH) return p;
  }
  return 0;
}

// A child of this test that sleeps in `group` until killed.
pid_t sleeper_in(const fs::path& group) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) ::pause();
  }
  std::ofstream(group / "cgroup.procs") << pid << std::flush;
  return pid;
}

// Whether `pid`, a child of this test, ended by SIGKILL within 10 s (it is collected).
bool killed_within_10s(pid_t pid) {
  int status = 0;
  const bool ended = within_10s([&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
  return ended && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// The lock a live host holds on its group.
int hold_lock(const fs::path& group) {
  const int fd = ::open(group.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Ends `pid` (a child of this test) and removes `group` once it is empty.
void end_and_remove(pid_t pid, const fs::path& group) {
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  within_10s([&] { return ::rmdir(group.c_str()) == 0 || errno == ENOENT; });
}

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto& support = process::cgroup_support();
    if (!support.unified) GTEST_SKIP() << "no writable control group here";
    base = *support.unified;
  }
  // The sequence number of the next group this process makes (one is made to learn it).
  // This process's own sweep has run once it returns: it never meets the groups a test plants.
  std::uint64_t next_sequence() {
    auto probe = process::ExtensionCgroup::create("probe", std::nullopt);
    EXPECT_TRUE(probe && *probe && (*probe)->unified_dir());
    if (!probe || !*probe || !(*probe)->unified_dir()) return 0;
    const std::string name = (*probe)->unified_dir()->filename().string();  // exthost-<pid>-<seq>-probe
    const auto first = name.find('-', std::string("exthost-").size());
    const auto sequence = std::stoull(name.substr(first + 1, name.find('-', first + 1) - first - 1));
    std::promise<void> swept;  // chores run in order: the sweep posted before this one is done
    process::janitor::post([&] { swept.set_value(); });
    EXPECT_EQ(swept.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
    return sequence + 1;
  }
  fs::path name_of(std::uint64_t sequence, const std::string& id) const {
    return base / ("exthost-" + std::to_string(::getpid()) + "-" + std::to_string(sequence) + "-" + id);
  }
  fs::path base;
};

TEST_F(CgroupTest, TheSweepLeavesAGroupWhoseLockIsHeldWhateverItsPidAndRemovesOneWhoseHostIsGone) {
  // Under a folder of the test's own, so that no other host on this machine sweeps them.
  const fs::path own = base / ("exthost_sweep_test-" + std::to_string(::getpid()));
  ASSERT_EQ(::mkdir(own.c_str(), 0755), 0);
  const pid_t gone = absent_pid();
  ASSERT_GT(gone, 0);
  // A live host in another pid namespace: its pid means nothing here, but it holds the lock.
  const fs::path live = own / ("exthost-" + std::to_string(gone) + "-1-live");
  const fs::path stale = own / ("exthost-" + std::to_string(gone) + "-2-stale");
  ASSERT_EQ(::mkdir(live.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0);
  const int lock = hold_lock(live);
  ASSERT_GE(lock, 0);
  const pid_t live_member = sleeper_in(live);
  const pid_t stale_member = sleeper_in(stale);

  process::sweep_stale_groups(own);

  EXPECT_TRUE(killed_within_10s(stale_member)) << "what a gone host left is killed";
  EXPECT_TRUE(within_10s([&] { return !fs::exists(stale); })) << stale << " was not removed";
  EXPECT_TRUE(testing::alive(live_member)) << "a live host's extension was killed";
  EXPECT_TRUE(fs::exists(live));

  end_and_remove(live_member, live);
  ::close(lock);
  end_and_remove(0, own);
}

TEST_F(CgroupTest, AStaleGroupInTheWayOfTheNextNameIsRemovedAndTheExtensionStaysContained) {
  const auto next = next_sequence();
  ASSERT_GT(next, 0u);
  // Left by a host with this pid that crashed: nobody holds their locks.
  const fs::path first = name_of(next, "victim");
  const fs::path second = name_of(next + 1, "victim");
  ASSERT_EQ(::mkdir(first.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(second.c_str(), 0755), 0);
  const pid_t leftover = sleeper_in(first);

  auto made = process::ExtensionCgroup::create("victim", std::nullopt);
  ASSERT_TRUE(made) << made.error().message;
  ASSERT_TRUE(*made && (*made)->unified_dir()) << "containment was dropped";
  EXPECT_EQ(*(*made)->unified_dir(), name_of(next + 2, "victim"));
  EXPECT_TRUE(killed_within_10s(leftover));
  EXPECT_TRUE(within_10s([&] { return !fs::exists(first) && !fs::exists(second); }));
  made->reset();
  EXPECT_TRUE(within_10s([&] { return !fs::exists(name_of(next + 2, "victim")); }));
}

TEST_F(CgroupTest, AnExtensionLeftWithoutAGroupIsWarnedAboutAndReportedUncontainedAndTheNextIsContained) {
  const testing::TempRoot root("cgroup");
  Host host(testing::isolated_options(root.path() / "home"));
  const auto next = next_sequence();
  ASSERT_GT(next, 0u);
  // Every name the next extension could take is held by live hosts.
  std::vector<std::pair<fs::path, int>> taken;
  for (int i = 0; i < process::ExtensionCgroup::k_name_attempts; ++i) {
    const fs::path dir = name_of(next + static_cast<std::uint64_t>(i), "crowded");
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    taken.emplace_back(dir, hold_lock(dir));
    ASSERT_GE(taken.back().second, 0);
  }
  ::testing::internal::CaptureStderr();
  auto crowded = host.load(testing::write_fake_plugin(root.path(), "crowded", {"echo"}));
  const std::string warned = ::testing::internal::GetCapturedStderr();
  auto roomy = host.load(testing::write_fake_plugin(root.path(), "roomy", {"echo"}));
  for (const auto& [dir, fd] : taken) {
    ::close(fd);
    ::rmdir(dir.c_str());
  }
  ASSERT_TRUE(crowded) << crowded.error().message;
  EXPECT_FALSE(crowded->contained_by_cgroup);
  EXPECT_NE(warned.find("Extension 'crowded': no free name for its control group"), std::string::npos) << warned;
  EXPECT_NE(warned.find("contained_by_cgroup: false"), std::string::npos) << warned;
  ASSERT_TRUE(roomy) << roomy.error().message;
  EXPECT_TRUE(roomy->contained_by_cgroup) << "containment stays on for later extensions";
}

}  // namespace
}  // namespace exthost

// Integration tests of letting a child go: a process that cannot be collected yet and a
// control group that cannot be removed yet are dealt with later, never by holding the thread
// that let them go.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <future>
#include <memory>
#include <stdexcept>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/bounded.hpp"
#include "../support/proc.hpp"
#include "process/cgroup.hpp"
#include "process/child.hpp"
#include "process/environment.hpp"
#include "process/janitor.hpp"

namespace exthost {
namespace {

namespace fs = std::filesystem;

// Another process traces `target` (ptrace(2)). Until it lets go, the target's exit is
// reported to it alone, so the target's parent cannot collect it: a child that stays
// uncollectable for as long as the test wants.
class Tracer {
 public:
  static std::unique_ptr<Tracer> attach(pid_t target) {
    int ready[2];
    int release[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return nullptr;
    if (::pipe2(release, O_CLOEXEC) != 0) {
      ::close(ready[0]);
      ::close(ready[1]);
      return nullptr;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      ::close(release[1]);  // so that the test's close is an EOF here
      const char ok = ::ptrace(PTRACE_SEIZE, target, nullptr, nullptr) == 0 ? 1 : 0;
      (void)!::write(ready[1], &ok, 1);
      char byte = 0;
      (void)!::read(release[0], &byte, 1);  // EOF: let go
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    std::unique_ptr<Tracer> tracer(new Tracer(pid, release[1]));
    char ok = 0;
    const bool attached = pid > 0 && ::read(ready[0], &ok, 1) == 1 && ok == 1;
    ::close(ready[0]);
    return attached ? std::move(tracer) : nullptr;
  }
  ~Tracer() { release(); }
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void release() {
    if (m_release_fd < 0) return;
    ::close(m_release_fd);
    m_release_fd = -1;
    if (m_pid > 0) ::waitpid(m_pid, nullptr, 0);
  }

 private:
  Tracer(pid_t pid, int release_fd) : m_pid(pid), m_release_fd(release_fd) {}
  pid_t m_pid;
  int m_release_fd;
};

TEST(ChildTest, DestroyingAChildThatCannotBeCollectedYetDoesNotHoldTheThread) {
  std::signal(SIGPIPE, SIG_IGN);
  auto io = std::make_unique<boost::asio::io_context>();
  process::SpawnSpec spec;
  spec.extension_id = "uncollectable";
  spec.program = EXTHOST_FAKE_EXTENSION;
  spec.args = {"deaf"};
  spec.environment = process::allowed_environment();
  auto spawned = process::Child::spawn(io->get_executor(), spec);
  ASSERT_TRUE(spawned) << spawned.error().message;
  auto child = std::move(spawned).value();
  const pid_t pid = child->pid();
  auto tracer = Tracer::attach(pid);
  if (!tracer) {
    child->kill_group();
    GTEST_SKIP() << "this host does not allow ptrace";
  }
  child.reset();
  // The reaper has not run: destroying the context destroys it, and the Child with it, while
  // the process still runs. The Child kills it, but cannot collect it while it is traced.
  auto destroyed = std::async(std::launch::async, [&] { io.reset(); });
  const bool returned = destroyed.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  tracer->release();  // the exit now reaches this process
  destroyed.wait();
  EXPECT_TRUE(returned) << "the thread destroying the Child waited for a process it could not collect";
  // Collected all the same, off that thread.
  for (int i = 0; i < 1000 && exthost::testing::proc_state(pid) != 0; ++i) ::usleep(10'000);
  EXPECT_EQ(exthost::testing::proc_state(pid), 0) << "pid " << pid << " was not collected";
}

TEST(ChildTest, AControlGroupThatCannotBeRemovedAtOnceIsRemovedOnceItCanBe) {
  auto made = process::ExtensionCgroup::create("busy", std::nullopt);
  ASSERT_TRUE(made) << made.error().message;
  if (!*made || !(*made)->unified_dir()) GTEST_SKIP() << "no writable control group here";
  const fs::path dir = *(*made)->unified_dir();
  const fs::path nested = dir / "nested";  // a group inside keeps it from being removed
  ASSERT_EQ(::mkdir(nested.c_str(), 0755), 0);
  made->reset();
  // Chores run in order: once this one has run, the first attempt has failed.
  std::promise<void> attempted;
  process::janitor::post([&] { attempted.set_value(); });
  ASSERT_EQ(attempted.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(fs::exists(dir));
  ASSERT_EQ(::rmdir(nested.c_str()), 0);
  for (int i = 0; i < 1000 && fs::exists(dir); ++i) ::usleep(10'000);
  EXPECT_FALSE(fs::exists(dir)) << dir << " was not removed once it could be";
}

TEST(ChildTest, AnExitCallbackThatThrowsIsLoggedAndTheOthersStillRun) {
  std::signal(SIGPIPE, SIG_IGN);
  boost::asio::io_context io;
  process::SpawnSpec spec;
  spec.extension_id = "callbacks";
  spec.program = EXTHOST_FAKE_EXTENSION;
  spec.args = {"deaf"};
  spec.environment = process::allowed_environment();
  auto spawned = process::Child::spawn(io.get_executor(), spec);
  ASSERT_TRUE(spawned) << spawned.error().message;
  auto child = std::move(spawned).value();
  bool before_exit = false;
  bool after_exit = false;
  child->on_exit([] { throw std::runtime_error("injected fault"); });
  child->on_exit([&] { before_exit = true; });
  child->kill_group();
  EXPECT_TRUE(exthost::testing::run_until(io, [&] { return before_exit; }));
  EXPECT_TRUE(child->reaped());
  // Registered once it has been reaped: posted, and guarded the same way.
  child->on_exit([] { throw std::runtime_error("injected fault"); });
  child->on_exit([&] { after_exit = true; });
  EXPECT_TRUE(exthost::testing::run_until(io, [&] { return after_exit; }));
}

}  // namespace
}  // namespace exthost

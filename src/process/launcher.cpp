#include "process/launcher.hpp"

#include <cerrno>
#include <cstdint>
#include <csignal>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/text.hpp"

namespace exthost::process {
namespace {

// The child's stack: it runs a few system calls only, but instrumented builds need room.
constexpr std::size_t k_child_stack_bytes = 256 * 1024;

// The kernel's struct sigaction (x86-64 and aarch64 layout): SIG_DFL needs no restorer.
struct KernelSigaction {
  void (*handler)(int) = SIG_DFL;
  unsigned long flags = 0;
  void (*restorer)() = nullptr;
  unsigned long mask = 0;
};

struct ChildArgs {
  const char* exe = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;
  int stdio[3] = {-1, -1, -1};  // the child's ends: become 0, 1, 2
  pid_t parent = 0;
  const struct rlimit* rlimits = nullptr;  // with rlimit_resources: set one by one
  const int* rlimit_resources = nullptr;
  int rlimit_count = 0;
  const char* const* join_files = nullptr;  // cgroup.procs files to write "0" to
  int join_count = 0;
  volatile int failed_step = 0;  // k_step_*: which step's errno `error` is
  volatile int error = 0;  // written by the child before it exits: shared memory
  int report_fd = -1;      // where a forked child (ThreadSanitizer builds) writes its errno
};

// Which step failed, for the error text: a general step, or the i-th limit or group.
constexpr int k_step_general = 0;
constexpr int k_step_rlimit = 1000;  // + index
constexpr int k_step_join = 2000;    // + index

// The child's last words: its errno, where the parent will look for it, then exit.
[[noreturn]] __attribute__((no_sanitize("address", "undefined", "thread"))) void report_failure(ChildArgs* a, int err) {
  a->error = err;
  if (a->report_fd >= 0) ::syscall(SYS_write, a->report_fd, &err, sizeof err);
  ::syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// Runs in the child, on its own stack, in the host's memory, until exec: raw system calls
// only — no allocation, no locks, no libc wrapper a sanitizer intercepts (the child shares
// the parent thread's memory and thread-local state, so an interceptor would record the
// child's work as the parent's), no sanitizer instrumentation.
__attribute__((no_sanitize("address", "undefined", "thread"))) int child_main(void* raw) {
  auto* a = static_cast<ChildArgs*>(raw);
  // Reports the failed call's error to the parent through the shared ChildArgs, then ends.
#define EXTHOST_CHILD_CHECK(call)                   \
  do {                                              \
    const long rc_ = (call);                        \
    if (rc_ < 0) {                                  \
      report_failure(a, errno);                     \
    }                                               \
  } while (0)
  EXTHOST_CHILD_CHECK(::syscall(SYS_setsid));
  EXTHOST_CHILD_CHECK(::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0));
  if (::syscall(SYS_getppid) != a->parent) ::syscall(SYS_exit_group, 127);
  // glibc's sigaction wrapper also refuses its own reserved signals (32 and 33), whose
  // ignored state a host may have inherited.
  KernelSigaction dfl{};
  for (int s = 1; s < NSIG; ++s) ::syscall(SYS_rt_sigaction, s, &dfl, nullptr, sizeof(dfl.mask));
  for (int i = 0; i < a->rlimit_count; ++i) {
    a->failed_step = k_step_rlimit + i;
    EXTHOST_CHILD_CHECK(::syscall(SYS_prlimit64, 0, a->rlimit_resources[i], &a->rlimits[i], nullptr));
  }
  for (int i = 0; i < a->join_count; ++i) {
    a->failed_step = k_step_join + i;
    const long fd = ::syscall(SYS_openat, AT_FDCWD, a->join_files[i], O_WRONLY | O_CLOEXEC);
    if (fd < 0) report_failure(a, errno);
    const long written = ::syscall(SYS_write, fd, "0", 1);
    if (written < 0) report_failure(a, errno);
    ::syscall(SYS_close, fd);
  }
  a->failed_step = k_step_general;
  for (int target = 0; target < 3; ++target) {
    const int fd = a->stdio[target];
    if (fd == target) {
      EXTHOST_CHILD_CHECK(::syscall(SYS_fcntl, fd, F_SETFD, 0));  // in place: keep it across exec
    } else {
      EXTHOST_CHILD_CHECK(::syscall(SYS_dup2, fd, target));
    }
  }
  if (a->cwd != nullptr) EXTHOST_CHILD_CHECK(::syscall(SYS_chdir, a->cwd));
  EXTHOST_CHILD_CHECK(::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC));
  const unsigned long no_signals = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, nullptr, sizeof(no_signals));
  ::syscall(SYS_execve, a->exe, a->argv, a->envp);
  report_failure(a, errno);
#undef EXTHOST_CHILD_CHECK
  return 127;
}

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
// clone3 with CLONE_VM: like clone(), the child starts on `args->stack` in the host's
// memory; it calls fn(arg) there and exits with its result (it never returns through this
// frame, which belongs to the parent's stack). Returns the child's pid, or -errno.
__attribute__((noinline)) long clone3_on_stack(struct clone_args* args, int (*fn)(void*), void* arg) {
  register long rax asm("rax") = SYS_clone3;
  register struct clone_args* rdi asm("rdi") = args;
  register unsigned long rsi asm("rsi") = sizeof(struct clone_args);
  register int (*r12)(void*) asm("r12") = fn;
  register void* r13 asm("r13") = arg;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xor %%ebp, %%ebp\n\t"  // the child: an empty frame chain on its own stack
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "mov %%eax, %%edi\n\t"
      "mov $231, %%eax\n\t"  // exit_group
      "syscall\n\t"
      "hlt\n"
      "1:\n\t"
      : "+r"(rax)
      : "r"(rdi), "r"(rsi), "r"(r12), "r"(r13)
      : "rcx", "r11", "memory");
  return rax;
}
#endif

Error spawn_error(const std::string& id, int err, const std::string& step = {}) {
  return Error::extension("Failed to spawn extension '" + id + "': " + (step.empty() ? "" : step + ": ") +
                          util::os_error_text(err));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Result<Launched> launch(const std::string& extension_id, const std::string& exe, const std::vector<std::string>& args,
                        const std::optional<std::filesystem::path>& cwd, const std::vector<std::string>& environment,
                        const Confinement& confinement) {
  // Everything the child touches is prepared here: it must not allocate.
  std::vector<struct rlimit> rlimits;
  std::vector<int> rlimit_resources;
  for (const auto& r : confinement.rlimits) {
    rlimits.push_back({r.soft, r.hard});
    rlimit_resources.push_back(r.resource);
  }
  // The files the child writes to join its groups; when the clone cannot create it inside
  // its unified group, that group's cgroup.procs too (the last entry).
  std::vector<const char*> join_files;
  for (const auto& f : confinement.join_files) join_files.push_back(f.c_str());
  if (!confinement.cgroup_procs_file.empty()) join_files.push_back(confinement.cgroup_procs_file.c_str());
  const int joins_when_placed = static_cast<int>(confinement.join_files.size());
  std::vector<char*> argv;
  argv.reserve(args.size() + 2);
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(environment.size() + 1);
  for (const auto& kv : environment) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  const std::string cwd_text = cwd ? cwd->string() : std::string();

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  };
  if (::pipe2(in, O_CLOEXEC) < 0 || ::pipe2(out, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0) {
    const int e = errno;
    close_all();
    return spawn_error(extension_id, e);
  }

  void* stack = ::mmap(nullptr, k_child_stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    const int e = errno;
    close_all();
    return spawn_error(extension_id, e);
  }

  ChildArgs a;
  a.exe = exe.c_str();
  a.argv = argv.data();
  a.envp = envp.data();
  a.cwd = cwd ? cwd_text.c_str() : nullptr;
  a.stdio[0] = in[0];
  a.stdio[1] = out[1];
  a.stdio[2] = err[1];
  a.parent = ::getpid();
  a.rlimits = rlimits.data();
  a.rlimit_resources = rlimit_resources.data();
  a.rlimit_count = static_cast<int>(rlimits.size());
  a.join_files = join_files.data();
  a.join_count = static_cast<int>(join_files.size());

  // No handler of the host may run in the child while it shares our memory: block every
  // signal around the clone (the child resets handlers, then clears its mask).
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer cannot follow a child that runs on the spawning thread's memory: after
  // it, the spawning thread's join no longer orders anything (a three-line clone + join
  // program shows the same false report). Under TSan the launcher forks instead; the child
  // runs the same steps and reports a failure through a close-on-exec pipe.
  int report[2] = {-1, -1};
  if (::pipe2(report, O_CLOEXEC) < 0) report[0] = report[1] = -1;
  a.report_fd = report[1];
  const pid_t pid = ::fork();
  if (pid == 0) {
    child_main(&a);  // exits or execs
  }
  const int clone_errno = errno;
  if (report[1] >= 0) ::close(report[1]);
  if (pid > 0 && report[0] >= 0) {
    int child_errno = 0;
    if (::read(report[0], &child_errno, sizeof child_errno) == sizeof child_errno) a.error = child_errno;
  }
  if (report[0] >= 0) ::close(report[0]);
#else
  pid_t pid = -1;
  int clone_errno = 0;
#if defined(__x86_64__)
  if (confinement.cgroup_fd >= 0) {
    struct clone_args ca {};
    ca.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP;
    ca.exit_signal = SIGCHLD;
    ca.stack = reinterpret_cast<std::uintptr_t>(stack);
    ca.stack_size = k_child_stack_bytes;
    ca.cgroup = static_cast<std::uint64_t>(confinement.cgroup_fd);
    a.join_count = joins_when_placed;
    const long r = clone3_on_stack(&ca, child_main, &a);
    if (r > 0) pid = static_cast<pid_t>(r);
    // Otherwise (an older kernel, a group clone3 cannot place into): the child joins by a write.
  }
#endif
  if (pid < 0) {
    a.join_count = static_cast<int>(join_files.size());
    pid = ::clone(child_main, static_cast<char*>(stack) + k_child_stack_bytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    clone_errno = errno;
  }
#endif
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::munmap(stack, k_child_stack_bytes);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);

  if (pid < 0) {
    close_all();
    return spawn_error(extension_id, clone_errno);
  }
  if (a.error != 0) {  // the child failed before or at exec, and has exited
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    close_all();
    std::string step;
    const int failed = a.failed_step;
    if (failed >= k_step_join && failed - k_step_join < a.join_count) {
      step = std::string("cannot join its control group (") + join_files[static_cast<std::size_t>(failed - k_step_join)] + ")";
    } else if (failed >= k_step_rlimit && failed - k_step_rlimit < a.rlimit_count) {
      step = "cannot set its " + confinement.rlimits[static_cast<std::size_t>(failed - k_step_rlimit)].what;
    }
    return spawn_error(extension_id, a.error, step);
  }
  return Launched{pid, in[1], out[0], err[0]};
}

}  // namespace exthost::process

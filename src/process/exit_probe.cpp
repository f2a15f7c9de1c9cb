#include "process/exit_probe.hpp"

#include <cerrno>
#include <csignal>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace exthost::process {

ExitProbe::ExitProbe(pid_t pid) { m_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

ExitProbe::~ExitProbe() {
  if (m_pidfd >= 0) ::close(m_pidfd);
}

bool ExitProbe::exited() const {
  if (m_pidfd < 0) return true;
  siginfo_t info{};
  const int rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(m_pidfd), &info,
                          WEXITED | WNOHANG | WNOWAIT);
  if (rc < 0) return true;  // ECHILD: already reaped
  return info.si_pid != 0;
}

}  // namespace exthost::process

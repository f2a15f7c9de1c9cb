// process/exit_probe.hpp — "has this child exited?" without reaping and without blocking.
//
// Thread-safe and lock-free: it asks the kernel through a pidfd with WNOWAIT, so it never
// steals the exit status from the reaper and never confuses a recycled pid with the child.
#pragma once

#include <sys/types.h>

namespace exthost::process {

class ExitProbe {
 public:
  explicit ExitProbe(pid_t pid);  // opens a pidfd; a failed open reads as "exited"
  ~ExitProbe();
  ExitProbe(const ExitProbe&) = delete;
  ExitProbe& operator=(const ExitProbe&) = delete;

  // True once the child has exited (zombie or reaped), or if it cannot be observed.
  bool exited() const;

 private:
  int m_pidfd = -1;
};

}  // namespace exthost::process

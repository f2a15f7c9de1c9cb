// file_modes.hpp — meeting file modes as any user does, even as root.
//
// Root writes a file or folder whatever its mode (CAP_DAC_OVERRIDE). Capabilities belong to
// a thread, so one thread of the test can give them up while the others keep them, and run
// there what must find a read-only file read-only.
#pragma once

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <functional>
#include <future>
#include <thread>

namespace exthost::testing {

// Runs `work` on a thread without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH and waits for it.
// False (and `work` not run) when the thread cannot give them up.
inline bool run_without_file_override(const std::function<void()>& work) {
  std::promise<bool> dropped;
  std::thread t([&] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    bool ok = ::syscall(SYS_capget, &header, data) == 0;
    data[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    ok = ok && ::syscall(SYS_capset, &header, data) == 0;
    dropped.set_value(ok);
    if (ok) work();
  });
  t.join();
  return dropped.get_future().get();
}

}  // namespace exthost::testing

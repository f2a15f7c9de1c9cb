// hostile_files.hpp — files that must not be read as files: a FIFO nobody writes, a link
// to /dev/zero, a file over a cap. The helpers keep a reader that falls for them from
// hanging or growing the test process without bound, so the test fails instead.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

namespace exthost::testing {

inline void make_fifo(const std::filesystem::path& p) {
  std::filesystem::create_directories(p.parent_path());
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
}

inline void link_to_dev_zero(const std::filesystem::path& p) {
  std::filesystem::create_directories(p.parent_path());
  std::filesystem::create_symlink("/dev/zero", p);
}

// Writes `head`, then `filler` until the file holds `total` bytes, then `tail`.
inline void write_padded(const std::filesystem::path& p, const std::string& head, std::size_t total, char filler,
                         const std::string& tail) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << head << std::string(total - head.size() - tail.size(), filler) << tail;
}

// Runs `read` on a thread of its own. If it has not returned within `bound`, the test fails
// and `fifo` is opened for writing once, which wakes a reader blocked on it (it then sees
// the end of input), so the test ends either way.
template <class F>
auto read_beside_fifo(const std::filesystem::path& fifo, F read,
                      std::chrono::milliseconds bound = std::chrono::seconds(5)) -> decltype(read()) {
  auto pending = std::async(std::launch::async, std::move(read));
  if (pending.wait_for(bound) != std::future_status::ready) {
    ADD_FAILURE() << "reading beside the FIFO " << fifo << " did not return within " << bound.count() << " ms";
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }
  return pending.get();
}

// Lowers this process's address-space limit to what it maps now plus `headroom` while the
// object lives, so a reader that loads /dev/zero fails with bad_alloc instead of eating the
// machine. Does nothing under sanitizers, whose shadow memory needs the address space.
class AddressSpaceHeadroom {
 public:
  explicit AddressSpaceHeadroom(std::size_t headroom = std::size_t{512} << 20) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    std::ifstream status("/proc/self/status");
    std::string line;
    std::size_t mapped_kib = 0;
    while (std::getline(status, line)) {
      if (line.rfind("VmSize:", 0) == 0) mapped_kib = std::stoul(line.substr(7));
    }
    if (mapped_kib == 0 || ::getrlimit(RLIMIT_AS, &m_saved) != 0) return;
    rlimit lowered = m_saved;
    lowered.rlim_cur = mapped_kib * 1024 + headroom;
    if (m_saved.rlim_max != RLIM_INFINITY && lowered.rlim_cur > m_saved.rlim_max) return;
    m_active = ::setrlimit(RLIMIT_AS, &lowered) == 0;
#else
    (void)headroom;
#endif
  }
  ~AddressSpaceHeadroom() {
    if (m_active) ::setrlimit(RLIMIT_AS, &m_saved);
  }
  AddressSpaceHeadroom(const AddressSpaceHeadroom&) = delete;
  AddressSpaceHeadroom& operator=(const AddressSpaceHeadroom&) = delete;

 private:
  rlimit m_saved{};
  bool m_active = false;
};

}  // namespace exthost::testing

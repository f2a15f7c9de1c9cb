#include "util/bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/text.hpp"

namespace exthost::util {
namespace {

// Bytes a first read asks for when the file claims to be empty (as /proc files do).
constexpr std::size_t k_first_read_bytes = 4096;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string cap_text(std::size_t cap) {
  std::string text = "the cap of " + std::to_string(cap) + " bytes";
  constexpr std::size_t mib = 1024 * 1024;
  if (cap >= mib && cap % mib == 0) text += " (" + std::to_string(cap / mib) + " MiB)";
  return text;
}

}  // namespace

std::string file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown kind";
}

Result<std::optional<std::string>> read_bounded_file(const std::filesystem::path& path, std::size_t cap,
                                                     Symlinks links) {
  const std::string shown = path.string();
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one.
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (links == Symlinks::refuse) flags |= O_NOFOLLOW;
  Fd file{::open(path.c_str(), flags)};
  if (file.fd < 0) {
    const int err = errno;
    if (err == ENOENT) return std::optional<std::string>();
    if (err == ELOOP && links == Symlinks::refuse) {
      return Error::internal(shown + " is a symbolic link (links are not followed here)");
    }
    return Error::internal("cannot open " + shown + ": " + os_error_text(err));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return Error::internal("cannot read " + shown + ": " + os_error_text(errno));
  if (!S_ISREG(st.st_mode)) return Error::internal(shown + " is not a regular file (" + file_kind(st.st_mode) + ")");
  const auto size = static_cast<std::size_t>(std::max<off_t>(st.st_size, 0));
  if (size > cap) {
    return Error::internal(shown + " is " + std::to_string(size) + " bytes, over " + cap_text(cap));
  }

  // One byte beyond the cap is room enough to notice a file that grows while it is read.
  std::string text(std::min(std::max(size, k_first_read_bytes), cap) + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == text.size()) text.resize(std::min(text.size() * 2, cap + 1));
    const ssize_t n = ::read(file.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::internal("cannot read " + shown + ": " + os_error_text(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
    if (got > cap) return Error::internal(shown + " grew past " + cap_text(cap) + " while being read");
  }
  text.resize(got);
  return std::optional<std::string>(std::move(text));
}

}  // namespace exthost::util

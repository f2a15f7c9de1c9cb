#include "store/config_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::store {
namespace {

Result<std::optional<std::string>> read_file(const std::filesystem::path& file, util::Symlinks links) {
  auto text = util::read_bounded_file(file, k_max_config_file_bytes, links);
  if (!text) return Error::internal("config io error: " + text.error().message);
  return text;
}

// The key of a pair line, or nullopt for blank lines, comments and lines without '='.
std::optional<std::string_view> line_key(std::string_view line) {
  const auto t = util::trim(line);
  if (t.empty() || t.front() == '#') return std::nullopt;
  const auto eq = t.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  return util::trim(t.substr(0, eq));
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

Error io_error(const std::filesystem::path& file, const std::string& what, int err) {
  return Error::internal("config io error: " + what + " " + file.string() + ": " + util::os_error_text(err));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_config_text(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto line : split_lines(text)) {
    auto key = line_key(line);
    if (!key) continue;
    const auto t = util::trim(line);
    pairs.emplace_back(std::string(*key), std::string(util::trim(t.substr(t.find('=') + 1))));
  }
  return pairs;
}

Result<std::optional<std::string>> find_config_value(const std::filesystem::path& file, std::string_view key,
                                                     util::Symlinks links) {
  auto text = read_file(file, links);
  if (!text) return std::move(text).error();
  if (!text->has_value()) return std::optional<std::string>();
  for (auto& [k, v] : parse_config_text(**text)) {
    if (k == key) return std::optional<std::string>(std::move(v));
  }
  return std::optional<std::string>();
}

std::optional<std::string> read_config_value(const std::filesystem::path& file, std::string_view key) {
  auto value = find_config_value(file, key);
  if (value) return std::move(value).value();
  util::log().warn("{}; read as if absent", value.error().message);
  return std::nullopt;
}

Result<void> write_config_value(const std::filesystem::path& file, std::string_view key, std::string_view value,
                                util::Symlinks links) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return io_error(file.parent_path(), "cannot create", ec.value());
  auto old = read_file(file, links);
  if (!old) return std::move(old).error();
  const std::string old_text = std::move(old).value().value_or(std::string());
  const std::string replacement = std::string(key) + " = " + std::string(util::trim(value));
  std::string text;
  bool replaced = false;
  for (auto line : split_lines(old_text)) {
    if (!replaced && line_key(line) == key) {
      text += replacement;
      replaced = true;
    } else {
      text += line;
    }
    text += '\n';
  }
  if (!replaced) text += replacement + '\n';

  // A sibling temporary file unique to this writer, then one rename: readers see the old
  // file or the new one, never a part.
  static std::atomic<unsigned> counter{0};
  const auto tmp = file.parent_path() /
                   (file.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return io_error(tmp, "cannot create", errno);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error(tmp, "cannot write", err);
    }
    written += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, 0600);
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    const int err = synced != 0 ? synced : closed;
    ::unlink(tmp.c_str());
    return io_error(tmp, "cannot write", err);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return io_error(file, "cannot replace", err);
  }
  return {};
}

}  // namespace exthost::store

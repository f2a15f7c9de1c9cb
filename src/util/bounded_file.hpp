// util/bounded_file.hpp — reading a small file that someone else controls.
//
// Plugin directories and the exthost home hold files the host did not write. A FIFO there
// must not block the reader, a link to a device must not be read forever, and a huge file
// must not be loaded whole. read_bounded_file opens without blocking, accepts only a
// regular file, and never holds more than `cap` bytes of it.
//
// Thread safety: a free function with no shared state; it blocks only on the disk.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "exthost/result.hpp"

namespace exthost::util {

// What to do when the path's last component is a symbolic link.
enum class Symlinks { follow, refuse };

// The whole content of `path`; nullopt when nothing exists at that path (ENOENT).
// Errors (kind internal; callers wrap them in their own words):
//   "<path> is not a regular file (a FIFO)"        — also a directory, a character or block
//                                                    device, a socket
//   "<path> is a symbolic link (links are not followed here)"  — with Symlinks::refuse
//   "<path> is <n> bytes, over the cap of <cap> bytes"         — judged before reading
//   "<path> grew past the cap of <cap> bytes while being read"
//   "cannot open <path>: <os error>", "cannot read <path>: <os error>"
Result<std::optional<std::string>> read_bounded_file(const std::filesystem::path& path, std::size_t cap,
                                                     Symlinks links = Symlinks::follow);

// "a FIFO", "a character device", "a block device", "a socket", "a directory", "a regular
// file": the kind of file a stat() mode names, as the errors above print it.
std::string file_kind(unsigned mode);

}  // namespace exthost::util

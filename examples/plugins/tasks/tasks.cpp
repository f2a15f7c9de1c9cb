// The tasks example extension, in C++ with the header-only SDK: the slash command
// `report [DIR]` walks a folder, reporting its progress as a task, and prints a table of
// the largest files; the tool `largest` answers the same as JSON.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "exthost_sdk.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct Entry {
  std::string path;
  std::uintmax_t bytes;
};

// The `limit` largest regular files under `root`, largest first.
std::vector<Entry> largest(const fs::path& root, std::size_t limit, const std::function<void(std::size_t)>& progress) {
  std::vector<Entry> all;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto bytes = it->file_size(size_ec);
      if (!size_ec) all.push_back({fs::relative(it->path(), root, size_ec).string(), bytes});
      if (progress && all.size() % 50 == 0) progress(all.size());
    }
  }
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.bytes > b.bytes; });
  if (all.size() > limit) all.resize(limit);
  return all;
}

}  // namespace

int main() {
  exthost_sdk::Extension ext;

  ext.command("report", [&ext](exthost_sdk::Call& call, const std::vector<std::string>& args) -> json::value {
    const fs::path root = args.empty() ? fs::path(ext.plugin_root()) : fs::path(args[0]);
    call.system("Scanning " + root.string());
    ext.task_start("scan", "Scanning " + root.filename().string(), "generic");
    auto top = largest(root, 5, [&](std::size_t seen) { ext.task_update("scan", seen, std::nullopt, "files seen"); });
    ext.task_done("scan");
    std::vector<std::vector<std::string>> rows;
    for (const auto& e : top) rows.push_back({e.path, std::to_string(e.bytes)});
    call.table({"file", "bytes"}, rows);
    call.done();
    return json::object{{"status", "ok"}, {"files", top.size()}};
  });

  ext.tool("largest", "The five largest files under a folder",
           json::object{{"type", "object"}, {"properties", {{"dir", {{"type", "string"}}}}}},
           [&ext](exthost_sdk::Call& call) -> json::value {
             const auto input = call.input();
             const auto* dir = input.as_object().if_contains("dir");
             const fs::path root = dir && dir->is_string() ? fs::path(std::string(dir->get_string()))
                                                           : fs::path(ext.plugin_root());
             json::array out;
             for (const auto& e : largest(root, 5, {})) out.push_back(json::object{{"file", e.path}, {"bytes", e.bytes}});
             return json::object{{"files", std::move(out)}};
           });

  return ext.run();
}

#include "store/memory_import.hpp"

#include "store/memory_record_json.hpp"
#include "util/bounded_file.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace exthost::store {

std::filesystem::path reference_file(const std::filesystem::path& folder, std::string_view ns) {
  return folder / (std::string(ns) + ".jsonl");
}

Result<std::optional<ReferenceRecords>> read_reference_records(const std::filesystem::path& file, std::string_view ns) {
  auto text = util::read_bounded_file(file, k_max_import_file_bytes, util::Symlinks::refuse);
  if (!text) return std::move(text).error();
  if (!*text) return std::optional<ReferenceRecords>();
  ReferenceRecords out;
  const std::string_view all(**text);
  std::size_t line_number = 0;
  auto skip = [&](std::string_view why) {
    if (out.skipped++ < k_import_warnings_logged) {
      util::log().warn("memory: {} line {} skipped: {}", file.string(), line_number, why);
    }
  };
  for (std::size_t start = 0; start < all.size();) {
    const auto end = all.find('\n', start);
    std::string_view line = all.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? all.size() : end + 1;
    ++line_number;
    if (util::trim(line).empty()) continue;
    auto record = record_from_json_line(line);
    if (!record) {
      skip(record.error().message);
    } else if (record->ns != ns) {
      skip("its namespace is " + util::debug_quote(record->ns) + ", not " + util::debug_quote(ns));
    } else {
      out.records.push_back(std::move(record).value());
    }
  }
  if (out.skipped > k_import_warnings_logged) {
    util::log().warn("memory: {}: {} lines skipped in all", file.string(), out.skipped);
  }
  return std::optional<ReferenceRecords>(std::move(out));
}

}  // namespace exthost::store

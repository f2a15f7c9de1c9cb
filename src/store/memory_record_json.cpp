#include "store/memory_record_json.hpp"

#include <boost/json/array.hpp>
#include <limits>

#include "wire/json.hpp"

namespace exthost::store {

boost::json::object record_json(const MemoryRecord& r) {
  boost::json::object o;
  o["namespace"] = r.ns;
  o["timestamp_ms"] = r.timestamp_ms;
  o["content"] = r.content;
  boost::json::array tags;
  for (const auto& t : r.tags) tags.emplace_back(t);
  o["tags"] = std::move(tags);
  if (r.meta_json) {
    wire::JsonParser parser;
    auto meta = parser.parse(*r.meta_json);
    if (meta) o["meta"] = std::move(meta).value();
  }
  if (r.truncated) o["truncated"] = true;
  return o;
}

std::size_t record_json_bytes(const MemoryRecord& r) { return wire::to_json(record_json(r)).size(); }

Result<MemoryRecord> record_from_json_line(std::string_view line) {
  wire::JsonParser parser;
  auto parsed = parser.parse(line);
  if (!parsed) return Error::usage("not JSON: " + parsed.error().message);
  const auto* o = parsed->if_object();
  if (o == nullptr) return Error::usage("not a JSON object");
  MemoryRecord r;
  const auto* ns = o->if_contains("namespace");
  if (ns == nullptr || !ns->is_string()) return Error::usage("'namespace' is missing or not a string");
  r.ns = std::string(ns->get_string());
  const auto* ts = o->if_contains("timestamp_ms");
  constexpr auto k_max_timestamp = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (ts != nullptr && ts->is_int64() && ts->get_int64() >= 0) {
    r.timestamp_ms = static_cast<std::uint64_t>(ts->get_int64());
  } else if (ts != nullptr && ts->is_uint64() && ts->get_uint64() <= k_max_timestamp) {
    r.timestamp_ms = ts->get_uint64();
  } else {
    return Error::usage("'timestamp_ms' is not an unsigned integer");
  }
  const auto* content = o->if_contains("content");
  if (content == nullptr || !content->is_string()) return Error::usage("'content' is missing or not a string");
  r.content = std::string(content->get_string());
  if (r.content.size() > k_max_content_bytes) {
    return Error::usage("content too large: " + std::to_string(r.content.size()) + " bytes (max " +
                        std::to_string(k_max_content_bytes) + ")");
  }
  if (const auto* tags = o->if_contains("tags"); tags != nullptr && !tags->is_null()) {
    const auto* a = tags->if_array();
    if (a == nullptr) return Error::usage("'tags' is not an array of strings");
    for (const auto& t : *a) {
      if (!t.is_string()) return Error::usage("'tags' is not an array of strings");
      r.tags.emplace_back(t.get_string());
    }
  }
  if (const auto* meta = o->if_contains("meta"); meta != nullptr && !meta->is_null()) r.meta_json = wire::to_json(*meta);
  return r;
}

}  // namespace exthost::store

#include "store/memory_record_json.hpp"

#include <boost/json/array.hpp>

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

}  // namespace exthost::store

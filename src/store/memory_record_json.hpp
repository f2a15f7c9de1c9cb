// store/memory_record_json.hpp — a memory record as JSON (SPEC §5.13): the object a query
// answers with, and a line of the reference's `<namespace>.jsonl` files.
//
//   {"namespace":"notes","timestamp_ms":1767225600000,"content":"…","tags":["@t"],"meta":{…}}
//
// `meta` is left out when the record has none; `"truncated": true` is added to a record a
// query cut to the caps. The reference's further fields (id, project, provenance,
// sensitivity, retention) are read past: records written through the extension protocol
// never hold them.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <string_view>

#include "exthost/result.hpp"
#include "store/memory_store.hpp"

namespace exthost::store {

boost::json::object record_json(const MemoryRecord& record);
// The bytes of record_json(record) written compactly.
std::size_t record_json_bytes(const MemoryRecord& record);

// The record one line of a reference file holds. Errors (kind usage) say what is wrong:
// "not JSON: …", "not a JSON object", "'timestamp_ms' is not an unsigned integer",
// "'content' is missing or not a string", "content too large: N bytes (max 16384)",
// "'tags' is not an array of strings", "'namespace' is missing or not a string".
// Meta and tags over the caps are kept: a query cuts them (MemoryRecord::truncated).
Result<MemoryRecord> record_from_json_line(std::string_view line);

}  // namespace exthost::store

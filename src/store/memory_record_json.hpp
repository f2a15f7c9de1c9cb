// store/memory_record_json.hpp — a memory record as JSON (SPEC §5.13): the object a query
// answers with.
//
//   {"namespace":"notes","timestamp_ms":1767225600000,"content":"…","tags":["@t"],"meta":{…}}
//
// `meta` is left out when the record has none; `"truncated": true` is added to a record a
// query cut to the caps.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>

#include "store/memory_store.hpp"

namespace exthost::store {

boost::json::object record_json(const MemoryRecord& record);
// The bytes of record_json(record) written compactly.
std::size_t record_json_bytes(const MemoryRecord& record);

}  // namespace exthost::store

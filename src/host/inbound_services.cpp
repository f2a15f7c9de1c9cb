#include "host/inbound_services.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "store/config_store.hpp"
#include "store/memory_record_json.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace asio = boost::asio;
using rpc::InboundReply;

namespace {

// The reference's codes (SPEC §4.0).
constexpr int k_invalid_params = -32602;  // also "permission denied"
constexpr int k_method_not_found = -32601;
constexpr int k_storage_failure = -32000;

InboundReply denied(Permission p) {
  return InboundReply::error(k_invalid_params, "permission denied: " + std::string(wire_name(p)) + " required");
}

InboundReply missing(std::string_view name) {
  return InboundReply::error(k_invalid_params, "missing or invalid '" + std::string(name) + "' parameter");
}

const boost::json::string* string_param(const boost::json::value& params, std::string_view name) {
  const auto* o = params.if_object();
  if (o == nullptr) return nullptr;
  const auto* v = o->if_contains(name);
  return v == nullptr ? nullptr : v->if_string();
}

// Lenient optional filters: a wrong type counts as absent (SPEC §4.2).
std::optional<std::string> lenient_string(const boost::json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}
std::optional<std::uint64_t> lenient_unsigned(const boost::json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
  return std::nullopt;
}

// config.get / config.set key rules, checked on the trimmed key.
std::optional<InboundReply> bad_key(std::string_view key) {
  const auto t = util::trim(key);
  if (t.empty()) return InboundReply::error(k_invalid_params, "config key must be non-empty");
  if (t.find_first_of("./ ") != std::string_view::npos) {
    return InboundReply::error(k_invalid_params, "config key must not contain dots, slashes, or spaces");
  }
  return std::nullopt;
}

// --- the blocking halves, run on the store workers ---------------------------------------

asio::awaitable<Result<void>> append_on_worker(std::shared_ptr<SharedMemoryStore> memory, store::MemoryRecord record) {
  auto s = memory->get();
  if (!s) co_return std::move(s).error();
  co_return (*s)->append(record);
}

asio::awaitable<Result<store::MemoryPage>> query_on_worker(std::shared_ptr<SharedMemoryStore> memory,
                                                          store::MemoryQuery query) {
  auto s = memory->get();
  if (!s) co_return std::move(s).error();
  co_return (*s)->query(query);
}

// The plugin's store is never followed through a link (see config_resolution).
asio::awaitable<Result<std::optional<std::string>>> read_on_worker(std::filesystem::path file, std::string key) {
  co_return store::find_config_value(file, key, util::Symlinks::refuse);
}

asio::awaitable<Result<void>> write_on_worker(std::filesystem::path file, std::string key, std::string value) {
  co_return store::write_config_value(file, key, value, util::Symlinks::refuse);
}

}  // namespace

Result<store::MemoryStore*> SharedMemoryStore::get() {
  std::lock_guard lock(m_mutex);
  if (!m_store) {
    auto opened = store::MemoryStore::open(m_path);
    if (!opened) return std::move(opened).error();
    m_store = std::move(opened).value();
  }
  return m_store.get();
}

InboundServices::InboundServices(std::string extension_id, PermissionSet permissions,
                                 std::shared_ptr<SharedMemoryStore> memory, std::filesystem::path plugin_config_file,
                                 asio::any_io_executor workers)
    : m_id(std::move(extension_id)),
      m_permissions(permissions),
      m_memory(std::move(memory)),
      m_plugin_config_file(std::move(plugin_config_file)),
      m_workers(std::move(workers)) {}

asio::awaitable<InboundReply> InboundServices::handle(std::string method, boost::json::value params) {
  if (method == "memory.append") co_return co_await memory_append(std::move(params));
  if (method == "memory.query") co_return co_await memory_query(std::move(params));
  if (method == "config.get") co_return co_await config_get(std::move(params));
  if (method == "config.set") co_return co_await config_set(std::move(params));
  if (method == "config.subscribe") {
    // An acknowledgement only, as in the reference: no change notifications are pushed.
    if (!m_permissions.has(Permission::config_subscribe)) co_return denied(Permission::config_subscribe);
    boost::json::object ok;
    ok["ok"] = true;
    co_return InboundReply::ok(std::move(ok));
  }
  co_return InboundReply::error(k_method_not_found, "method not found: " + method);
}

asio::awaitable<InboundReply> InboundServices::memory_append(boost::json::value params) {
  if (!m_permissions.has(Permission::memory_write)) co_return denied(Permission::memory_write);
  const auto* ns = string_param(params, "namespace");
  if (ns == nullptr) co_return missing("namespace");
  if (*ns != m_id) {
    co_return InboundReply::error(k_invalid_params, "namespace must equal extension id '" + m_id + "' (got '" +
                                                        std::string(*ns) + "')");
  }
  const auto* content = string_param(params, "content");
  if (content == nullptr) co_return missing("content");
  const auto& o = params.get_object();
  store::MemoryRecord record;
  record.ns = std::string(*ns);
  record.content = std::string(*content);
  if (const auto* tags = o.if_contains("tags"); tags != nullptr && !tags->is_null()) {
    const auto* arr = tags->if_array();
    if (arr == nullptr) co_return InboundReply::error(k_invalid_params, "tags must be an array of strings");
    for (const auto& t : *arr) {
      if (!t.is_string()) co_return InboundReply::error(k_invalid_params, "tags must be an array of strings");
      record.tags.emplace_back(t.get_string());
    }
  }
  if (const auto* meta = o.if_contains("meta"); meta != nullptr && !meta->is_null()) {
    record.meta_json = wire::to_json(*meta);
  }
  if (auto capped = store::validate_meta_and_tags(record); !capped) {
    const std::string why = "memory.append refused for extension '" + m_id + "': " + capped.error().message;
    util::log().warn("{}", why);
    co_return InboundReply::error(k_invalid_params, why);
  }
  record.timestamp_ms = store::now_ms();
  const std::uint64_t timestamp = record.timestamp_ms;
  auto appended = co_await asio::co_spawn(m_workers, append_on_worker(m_memory, std::move(record)), asio::use_awaitable);
  if (!appended) {
    util::log().warn("extension '{}': memory.append failed: {}", m_id, appended.error().message);
    co_return InboundReply::error(k_storage_failure, appended.error().message);
  }
  boost::json::object ok;
  ok["ok"] = true;
  ok["timestamp_ms"] = timestamp;
  co_return InboundReply::ok(std::move(ok));
}

asio::awaitable<InboundReply> InboundServices::memory_query(boost::json::value params) {
  if (!m_permissions.has(Permission::memory_read)) co_return denied(Permission::memory_read);
  const auto* ns = string_param(params, "namespace");
  if (ns == nullptr) co_return missing("namespace");
  if (*ns != m_id) {
    co_return InboundReply::error(k_invalid_params, "namespace must equal extension id '" + m_id + "' (got '" +
                                                        std::string(*ns) + "')");
  }
  const auto& o = params.get_object();
  store::MemoryQuery query;
  query.ns = std::string(*ns);
  query.content_contains = lenient_string(o, "content_contains");
  query.tag_prefix = lenient_string(o, "tag_prefix");
  query.since_ms = lenient_unsigned(o, "since_ms");
  query.until_ms = lenient_unsigned(o, "until_ms");
  query.limit = lenient_unsigned(o, "limit");
  // The cursor is strict: a page read again or skipped is worse than an error.
  if (const auto* cursor = o.if_contains("cursor"); cursor != nullptr && !cursor->is_null()) {
    const auto* text = cursor->if_string();
    if (text != nullptr) query.after = store::decode_cursor(std::string_view(text->data(), text->size()));
    if (!query.after) {
      co_return InboundReply::error(k_invalid_params, "memory.query from extension '" + m_id +
                                                          "': invalid 'cursor' parameter (pass back a next_cursor "
                                                          "exactly as it came)");
    }
  }
  auto page = co_await asio::co_spawn(m_workers, query_on_worker(m_memory, std::move(query)), asio::use_awaitable);
  if (!page) co_return InboundReply::error(k_storage_failure, page.error().message);
  boost::json::array out;
  for (const auto& r : page->records) out.push_back(store::record_json(r));
  boost::json::object result;
  result["records"] = std::move(out);
  result["next_cursor"] = page->next ? boost::json::value(store::encode_cursor(*page->next)) : boost::json::value(nullptr);
  co_return InboundReply::ok(std::move(result));
}

asio::awaitable<InboundReply> InboundServices::config_get(boost::json::value params) {
  const auto* key = string_param(params, "key");
  if (key == nullptr) co_return missing("key");
  if (auto bad = bad_key(*key)) co_return std::move(*bad);
  // Read with the key as sent, as the reference does.
  auto value = co_await asio::co_spawn(m_workers, read_on_worker(m_plugin_config_file, std::string(*key)),
                                       asio::use_awaitable);
  if (!value) co_return InboundReply::error(k_storage_failure, value.error().message);
  boost::json::object result;
  result["value"] = *value ? boost::json::value(**value) : boost::json::value(nullptr);
  co_return InboundReply::ok(std::move(result));
}

asio::awaitable<InboundReply> InboundServices::config_set(boost::json::value params) {
  if (!m_permissions.has(Permission::config_write)) co_return denied(Permission::config_write);
  const auto* key = string_param(params, "key");
  if (key == nullptr) co_return missing("key");
  if (auto bad = bad_key(*key)) co_return std::move(*bad);
  const auto* value = string_param(params, "value");
  if (value == nullptr) co_return missing("value");
  auto written = co_await asio::co_spawn(
      m_workers, write_on_worker(m_plugin_config_file, std::string(util::trim(*key)), std::string(*value)),
      asio::use_awaitable);
  if (!written) co_return InboundReply::error(k_storage_failure, written.error().message);
  boost::json::object ok;
  ok["ok"] = true;
  co_return InboundReply::ok(std::move(ok));
}

}  // namespace exthost::host

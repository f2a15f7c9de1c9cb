#include "wire/message.hpp"

#include <boost/json/object.hpp>
#include <limits>
#include <optional>

#include "wire/json.hpp"

namespace exthost::wire {

bool is_application_error(const Error& error) { return error.cause == ErrorCause::application; }

Message classify(boost::json::value frame) {
  auto* obj = frame.if_object();
  if (obj == nullptr) return Discarded{"Unrecognized frame; dropping"};

  boost::json::value* id = obj->if_contains("id");
  const bool id_present = id != nullptr && !id->is_null();
  boost::json::value* method = obj->if_contains("method");
  const bool has_method = method != nullptr && method->is_string();

  auto take_params = [obj]() -> boost::json::value {
    if (boost::json::value* p = obj->if_contains("params")) return std::move(*p);
    return nullptr;
  };

  if (id_present && has_method) {
    if (!id->is_string() && !id->is_number()) {
      return Discarded{"Discarding inbound request: JSON-RPC id must be a string or a number"};
    }
    InboundRequest req;
    req.id = std::move(*id);
    req.method = std::string(method->get_string());
    req.params = take_params();
    return req;
  }

  if (id_present) {
    std::uint64_t numeric = 0;
    if (id->is_uint64()) {
      numeric = id->get_uint64();
    } else if (id->is_int64() && id->get_int64() >= 0) {
      numeric = static_cast<std::uint64_t>(id->get_int64());
    } else {
      return Discarded{
          "Discarding response frame: id does not match any request the runtime issued "
          "(runtime request ids are always numeric)"};
    }
    Response resp;
    resp.id = numeric;
    boost::json::value* err = obj->if_contains("error");
    if (err != nullptr && !err->is_null()) {  // "error": null counts as absent (A9, §9 Q19)
      std::string message = "unknown extension error";
      std::optional<std::int64_t> code;
      std::optional<std::string> data;
      if (auto* eo = err->if_object()) {
        if (auto* m = eo->if_contains("message"); m != nullptr && m->is_string()) {
          message = std::string(m->get_string());
        }
        if (auto* c = eo->if_contains("code"); c != nullptr && c->is_int64()) code = c->get_int64();
        if (auto* c = eo->if_contains("code"); c != nullptr && c->is_uint64() &&
                                               c->get_uint64() <= std::numeric_limits<std::int64_t>::max()) {
          code = static_cast<std::int64_t>(c->get_uint64());
        }
        if (auto* d = eo->if_contains("data"); d != nullptr) data = to_json(*d);
      }
      Error e = Error::extension(std::string(k_application_error_prefix) + message).because(ErrorCause::application);
      e.code = code;
      e.data_json = std::move(data);
      resp.outcome = std::move(e);
    } else if (boost::json::value* r = obj->if_contains("result")) {
      resp.outcome = std::move(*r);
    } else {
      resp.outcome = boost::json::value(nullptr);
    }
    return resp;
  }

  if (has_method) {
    Notification n;
    n.method = std::string(method->get_string());
    n.params = take_params();
    return n;
  }
  return Discarded{"Unrecognized frame; dropping"};
}

}  // namespace exthost::wire

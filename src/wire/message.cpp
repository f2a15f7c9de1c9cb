#include "wire/message.hpp"

#include <boost/json/object.hpp>

namespace exthost::wire {

bool is_application_error(std::string_view message) {
  return message.substr(0, k_application_error_prefix.size()) == k_application_error_prefix;
}

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
      if (auto* eo = err->if_object()) {
        if (auto* m = eo->if_contains("message"); m != nullptr && m->is_string()) {
          message = std::string(m->get_string());
        }
      }
      resp.outcome = Error::extension(std::string(k_application_error_prefix) + message);
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

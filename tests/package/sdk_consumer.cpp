// An extension built against the installed header-only SDK: one tool, `echo`.
#include <exthost_sdk.hpp>

int main() {
  exthost_sdk::Extension ext;
  ext.tool("echo", "Echo text back", boost::json::object{{"type", "object"}},
           [](exthost_sdk::Call& call) -> boost::json::value {
             return boost::json::object{{"content", "sdk: " + std::string(call.input().at("text").as_string())}};
           });
  return ext.run();
}

// The wordcount example extension, in C++: one tool, `count`, answering the lines, words
// and bytes of `text`. Blocking stdio, Content-Length framing, Boost.JSON.
#include <boost/json.hpp>
#include <cctype>
#include <iostream>
#include <optional>
#include <string>

namespace json = boost::json;

static std::optional<json::value> read_message() {
  std::size_t length = 0;
  bool have_length = false;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "content-length") {
      length = std::stoul(line.substr(colon + 1));
      have_length = true;
    }
  }
  if (!have_length) return std::nullopt;
  std::string body(length, '\0');
  if (!std::cin.read(body.data(), static_cast<std::streamsize>(length))) return std::nullopt;
  boost::system::error_code ec;
  json::value message = json::parse(body, ec);
  if (ec) return json::value(nullptr);  // not JSON (bytes that are not UTF-8, say): skipped
  return message;
}

static void send(const json::value& message) {
  const std::string body = json::serialize(message);
  std::cout << "Content-Length: " << body.size() << "\r\n\r\n" << body << std::flush;
}

static json::value count(const std::string& text) {
  std::size_t lines = 0, words = 0;
  bool in_word = false;
  for (unsigned char c : text) {
    if (c == '\n') ++lines;
    const bool space = std::isspace(c) != 0;
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return json::object{{"lines", lines}, {"words", words}, {"bytes", text.size()}};
}

int main() {
  std::ios::sync_with_stdio(false);
  while (auto message = read_message()) {
    if (!message->is_object()) continue;
    const auto& m = message->get_object();
    if (!m.contains("id") || !m.contains("method") || !m.at("method").is_string()) continue;
    const json::value& id = m.at("id");
    const std::string method(m.at("method").as_string());
    if (method == "initialize") {
      json::object tool{{"name", "count"},
                        {"description", "Count the lines, words and bytes of a text"},
                        {"input_schema", json::parse(R"({"type":"object","properties":{"text":{"type":"string"}}})")}};
      send(json::object{{"jsonrpc", "2.0"}, {"id", id},
                        {"result", json::object{{"protocol_version", 1}, {"capabilities", json::object{{"tools", json::array{tool}}}}}}});
    } else if (method == "tool.call") {
      const auto& params = m.at("params").as_object();
      const auto* input = params.at("input").if_object();
      const json::value* text = input ? input->if_contains("text") : nullptr;
      send(json::object{{"jsonrpc", "2.0"}, {"id", id},
                        {"result", count(text && text->is_string() ? std::string(text->get_string()) : std::string())}});
    } else if (method == "shutdown") {
      send(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", nullptr}});
      return 0;
    } else {
      send(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", json::object{{"code", -32601}, {"message", "unknown method"}}}});
    }
  }
  return 0;
}

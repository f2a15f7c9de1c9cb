#include "protocol/command_output.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace exthost::protocol {
namespace {

Error fail(std::string m) { return Error::extension(std::move(m)); }

const boost::json::string* str(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v == nullptr ? nullptr : v->if_string();
}

}  // namespace

Result<CommandOutput> parse_command_output(const boost::json::value& params) {
  const auto* p = params.if_object();
  if (p == nullptr) return fail("command.output params must be a JSON object");
  const auto* request_id = str(*p, "request_id");
  if (request_id == nullptr) return fail("command.output missing request_id");
  if (request_id->empty()) return fail("command.output request_id must be non-empty");

  boost::json::object flat;
  const boost::json::object* event = nullptr;
  if (const auto* nested = p->if_contains("event")) {
    event = nested->if_object();
  } else {
    for (const auto& [key, value] : *p) {  // the members but request_id, in their order
      if (key != "request_id") flat.emplace(key, value);
    }
    event = &flat;
  }
  if (event == nullptr) return fail("command.output event must be a JSON object");
  const auto* kind = str(*event, "kind");
  if (kind == nullptr) return fail("command.output event missing 'kind'");

  CommandOutput out{std::string(*request_id), command_output::Done{}};
  if (*kind == "text" || *kind == "system" || *kind == "error") {
    const auto* content = str(*event, "content");
    if (content == nullptr) return fail("command.output " + std::string(*kind) + " event missing 'content'");
    if (*kind == "text") {
      out.event = command_output::Text{std::string(*content)};
    } else if (*kind == "system") {
      out.event = command_output::System{std::string(*content)};
    } else {
      if (content->empty()) return fail("command.output error content must be non-empty");
      out.event = command_output::Error{std::string(*content)};
    }
  } else if (*kind == "table") {
    command_output::Table table;
    const auto* headers = event->if_contains("headers");
    if (headers == nullptr || !headers->is_array()) return fail("command.output table missing 'headers' array");
    for (const auto& h : headers->get_array()) {
      if (!h.is_string()) return fail("command.output table header must be string");
      table.headers.emplace_back(h.get_string());
    }
    const auto* rows = event->if_contains("rows");
    if (rows == nullptr || !rows->is_array()) return fail("command.output table missing 'rows' array");
    for (const auto& r : rows->get_array()) {
      if (!r.is_array()) return fail("command.output table row must be array");
      std::vector<std::string> row;
      for (const auto& cell : r.get_array()) {
        if (!cell.is_string()) return fail("command.output table cell must be string");
        row.emplace_back(cell.get_string());
      }
      table.rows.push_back(std::move(row));
    }
    out.event = std::move(table);
  } else if (*kind == "done") {
    out.event = command_output::Done{};
  } else {
    return fail("unknown command.output event kind: " + std::string(*kind));
  }
  return out;
}

boost::json::value to_json(const CommandOutputEvent& e) {
  boost::json::object o;
  if (const auto* t = std::get_if<command_output::Text>(&e)) {
    o["kind"] = "text";
    o["content"] = t->content;
  } else if (const auto* s = std::get_if<command_output::System>(&e)) {
    o["kind"] = "system";
    o["content"] = s->content;
  } else if (const auto* x = std::get_if<command_output::Error>(&e)) {
    o["kind"] = "error";
    o["content"] = x->content;
  } else if (const auto* tb = std::get_if<command_output::Table>(&e)) {
    o["kind"] = "table";
    boost::json::array headers(tb->headers.begin(), tb->headers.end());
    boost::json::array rows;
    for (const auto& r : tb->rows) rows.emplace_back(boost::json::array(r.begin(), r.end()));
    o["headers"] = std::move(headers);
    o["rows"] = std::move(rows);
  } else {
    o["kind"] = "done";
  }
  return o;
}

}  // namespace exthost::protocol

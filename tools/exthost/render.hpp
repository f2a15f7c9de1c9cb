// render.hpp — how the exthost command shows command output and provider results.
#pragma once

#include <boost/json.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace exthost::cli {

// Columns padded to their widest cell, two spaces apart.
inline std::string render_table(const boost::json::object& table) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  for (const auto& h : table.at("headers").as_array()) header.emplace_back(h.as_string());
  rows.push_back(header);
  for (const auto& r : table.at("rows").as_array()) {
    std::vector<std::string> row;
    for (const auto& c : r.as_array()) row.emplace_back(c.as_string());
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

// One retained event of a command's output, as a line (or lines) of plain text.
inline std::string render_event(const std::string& event_json) {
  const auto v = boost::json::parse(event_json).as_object();
  if (!v.contains("method")) {  // command output ({"kind": …}); task events carry "method"
    const auto* kind = v.if_contains("kind");
    const std::string k(kind ? std::string(kind->as_string()) : std::string());
    if (k == "text" || k == "system") return std::string(v.at("content").as_string()) + "\n";
    if (k == "error") return "error: " + std::string(v.at("content").as_string()) + "\n";
    if (k == "table") return render_table(v);
    return {};  // done: an end marker, nothing to show
  }
  const std::string method(v.at("method").as_string());
  const std::string task = "[task " + std::string(v.at("id").as_string()) + "] ";
  if (method == "task.start") {
    return task + std::string(v.at("label").as_string()) + " (" + std::string(v.at("kind").as_string()) + ")\n";
  }
  if (method == "task.update") {
    std::string line = task;
    if (v.contains("current")) line += std::to_string(v.at("current").to_number<std::uint64_t>());
    if (v.contains("total")) line += "/" + std::to_string(v.at("total").to_number<std::uint64_t>());
    if (v.contains("message")) line += " " + std::string(v.at("message").as_string());
    return line + "\n";
  }
  if (method == "task.log") return task + std::string(v.at("line").as_string()) + "\n";
  if (v.contains("error")) return task + "failed: " + std::string(v.at("error").as_string()) + "\n";
  return task + "done\n";
}

// The text blocks of a provider result's content, concatenated.
inline std::string provider_text(const std::string& result_json) {
  std::string out;
  const auto v = boost::json::parse(result_json).as_object();
  for (const auto& block : v.at("content").as_array()) {
    const auto* b = block.if_object();
    if (b && b->contains("type") && b->at("type") == "text") out += std::string(b->at("text").as_string());
  }
  return out;
}

}  // namespace exthost::cli

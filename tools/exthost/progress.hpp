// progress.hpp — task.* events as live progress bars on a terminal, plain lines elsewhere.
//
// On a terminal, the bar of the task last touched is redrawn in place (carriage return,
// erase line); any other output first ends that line. Elsewhere every event is one line,
// so logs and pipes stay readable.
#pragma once

#include <boost/json.hpp>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "render.hpp"
#include "style.hpp"

namespace exthost::cli {

class TaskBoard {
 public:
  TaskBoard(std::FILE* out, bool live, Style style) : m_out(out), m_live(live), m_style(style) {}
  ~TaskBoard() { end_line(); }

  // Shows one retained command event (JSON text, as Host::invoke_command hands it over).
  void show(const std::string& event_json) {
    const auto v = boost::json::parse(event_json).as_object();
    if (!m_live || !v.contains("method")) {
      end_line();
      std::string text = render_event(event_json);
      if (v.contains("kind") && v.at("kind") == "error") text = m_style.red(text.substr(0, text.size() - 1)) + "\n";
      std::fputs(text.c_str(), m_out);
      std::fflush(m_out);
      return;
    }
    const std::string method(v.at("method").as_string());
    const std::string id(v.at("id").as_string());
    Task& t = m_tasks[id];
    if (method == "task.start") {
      t.label = std::string(v.at("label").as_string());
    } else if (method == "task.update") {
      if (v.contains("current")) t.current = v.at("current").to_number<std::uint64_t>();
      if (v.contains("total")) t.total = v.at("total").to_number<std::uint64_t>();
      if (v.contains("message")) t.message = std::string(v.at("message").as_string());
    } else if (method == "task.log") {
      end_line();
      std::fprintf(m_out, "%s %s\n", m_style.dim("[" + id + "]").c_str(), std::string(v.at("line").as_string()).c_str());
    } else {  // task.done
      t.done = true;
      if (v.contains("error")) t.error = std::string(v.at("error").as_string());
    }
    draw(id, t);
  }

 private:
  struct Task {
    std::string label;
    std::optional<std::uint64_t> current, total;
    std::string message;
    bool done = false;
    std::optional<std::string> error;
  };

  // A bar of this many cells.
  static constexpr int k_bar_width = 24;

  void draw(const std::string& id, const Task& t) {
    if (m_open && m_open_id != id) end_line();
    std::string line = "\r\x1b[K" + m_style.bold(t.label.empty() ? id : t.label) + " ";
    if (t.total && *t.total > 0) {
      const double f = std::min(1.0, static_cast<double>(t.current.value_or(0)) / static_cast<double>(*t.total));
      const int filled = static_cast<int>(f * k_bar_width);
      line += "[" + std::string(static_cast<std::size_t>(filled), '#') +
              std::string(static_cast<std::size_t>(k_bar_width - filled), '-') + "] " +
              std::to_string(t.current.value_or(0)) + "/" + std::to_string(*t.total);
    } else if (t.current) {
      line += std::to_string(*t.current);
    }
    if (!t.message.empty()) line += " " + m_style.dim(t.message);
    if (t.done) line += t.error ? " " + m_style.red("failed: " + *t.error) : " " + m_style.green("done");
    std::fputs(line.c_str(), m_out);
    std::fflush(m_out);
    m_open = !t.done;
    m_open_id = id;
    if (t.done) std::fputs("\n", m_out);
  }

  void end_line() {
    if (m_open) std::fputs("\n", m_out);
    m_open = false;
  }

  std::FILE* m_out;
  bool m_live;
  Style m_style;
  std::map<std::string, Task> m_tasks;
  bool m_open = false;  // a bar line is being redrawn and has no newline yet
  std::string m_open_id;
};

}  // namespace exthost::cli

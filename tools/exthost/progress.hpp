// progress.hpp — task.* events as live progress bars on a terminal, plain lines elsewhere.
//
// On a terminal, the bar of the task last touched is redrawn in place (carriage return,
// erase line); any other output first ends that line. Elsewhere every event is one line,
// so logs and pipes stay readable. Everything goes through an OpenLine, which the signal
// watcher ends and seals when the command is interrupted mid-bar.
#pragma once

#include <boost/json.hpp>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "open_line.hpp"
#include "render.hpp"
#include "style.hpp"

namespace exthost::cli {

class TaskBoard {
 public:
  TaskBoard(OpenLine& line, bool live, Style style) : m_line(line), m_live(live), m_style(style) {}
  ~TaskBoard() { m_line.end(); }

  // Shows one retained command event (JSON text, as Host::invoke_command hands it over).
  void show(const std::string& event_json) {
    const auto v = boost::json::parse(event_json).as_object();
    if (!m_live || !v.contains("method")) {
      m_line.end();
      std::string text = render_event(event_json);
      if (v.contains("kind") && v.at("kind") == "error") text = m_style.red(text.substr(0, text.size() - 1)) + "\n";
      m_line.write(text);
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
      m_line.end();
      m_line.write(m_style.dim("[" + id + "]") + " " + std::string(v.at("line").as_string()) + "\n");
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
    if (m_open_id != id) m_line.end();
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
    if (t.done) line += (t.error ? " " + m_style.red("failed: " + *t.error) : " " + m_style.green("done")) + "\n";
    m_line.write(line);  // a bar still running leaves its line open, to be redrawn
    m_open_id = id;
  }

  OpenLine& m_line;
  bool m_live;
  Style m_style;
  std::map<std::string, Task> m_tasks;
  std::string m_open_id;  // the task whose bar was drawn last
};

}  // namespace exthost::cli

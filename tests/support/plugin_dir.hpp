// plugin_dir.hpp — plugin directories for the fake extension, under a per-test root.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "exthost/host.hpp"

namespace exthost::testing {

// Host options isolated from the machine: the home under `home`, an empty environment.
inline HostOptions isolated_options(const std::filesystem::path& home) {
  HostOptions o;
  o.home = home;
  o.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return o;
}

// A temporary root for one test: <tmp>/exthost-<tag>-<pid>-<test>, removed afterwards.
class TempRoot {
 public:
  explicit TempRoot(const std::string& tag) {
    m_path = std::filesystem::temp_directory_path() /
             ("exthost-" + tag + "-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
  }
  ~TempRoot() { std::filesystem::remove_all(m_path); }
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

// Writes <parent>/<name>/.synaps-plugin/plugin.json running the fake extension with `args`;
// `extension_extra` is merged into the `extension` block (permissions, hooks, config, …).
inline std::filesystem::path write_fake_plugin(const std::filesystem::path& parent, const std::string& name,
                                               const std::vector<std::string>& args,
                                               const std::string& extension_extra = R"({"permissions":["tools.register"]})",
                                               const std::string& command = EXTHOST_FAKE_EXTENSION) {
  const auto dir = parent / name;
  std::filesystem::create_directories(dir / ".synaps-plugin");
  boost::json::object ext{{"protocol_version", 1}, {"runtime", "process"}, {"command", command}};
  boost::json::array a;
  for (const auto& s : args) a.emplace_back(s);
  ext["args"] = std::move(a);
  const boost::json::value extra = boost::json::parse(extension_extra);
  for (const auto& [k, v] : extra.as_object()) ext[k] = v;
  std::ofstream(dir / ".synaps-plugin" / "plugin.json") << boost::json::serialize(boost::json::object{{"extension", ext}});
  return dir;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace exthost::testing

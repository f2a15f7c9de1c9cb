#include "host/manifest.hpp"

#include <boost/json/object.hpp>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "util/text.hpp"
#include "wire/json.hpp"

namespace exthost::host {
namespace fs = std::filesystem;

namespace {

Error parse_error(const std::string& what) { return Error::manifest("Failed to parse extension manifest: " + what); }

Result<std::vector<std::string>> string_list(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return out;
  const auto* arr = v->if_array();
  if (arr == nullptr) return parse_error("invalid type for `" + std::string(key) + "`, expected a sequence");
  for (const auto& item : *arr) {
    if (!item.is_string()) return parse_error("invalid type in `" + std::string(key) + "`, expected a string");
    out.emplace_back(item.get_string());
  }
  return out;
}

}  // namespace

Result<std::optional<Manifest>> read_manifest(const fs::path& plugin_dir) {
  const fs::path path = plugin_dir / k_manifest_path;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::manifest("Failed to read plugin manifest: " + util::os_error_text(errno ? errno : ENOENT));
  std::stringstream buf;
  buf << in.rdbuf();
  wire::JsonParser parser;
  auto doc = parser.parse(buf.str());
  if (!doc) return Error::manifest("Invalid plugin manifest JSON: " + doc.error().message);
  const auto* root = doc->if_object();
  if (root == nullptr) return Error::manifest("Invalid plugin manifest JSON: expected an object");
  const auto* ext_value = root->if_contains("extension");
  if (ext_value == nullptr) return std::optional<Manifest>();
  const auto* ext = ext_value->if_object();
  if (ext == nullptr) return parse_error("invalid type: expected struct ExtensionManifest");

  Manifest m;
  m.plugin_dir = fs::absolute(plugin_dir).lexically_normal();
  m.id = m.plugin_dir.filename().string();
  if (m.id.empty()) m.id = m.plugin_dir.parent_path().filename().string();
  m.extension = *ext_value;

  if (const auto* v = ext->if_contains("protocol_version")) {
    if (v->is_uint64() && v->get_uint64() <= UINT32_MAX) {
      m.protocol_version = static_cast<std::uint32_t>(v->get_uint64());
    } else if (v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= UINT32_MAX) {
      m.protocol_version = static_cast<std::uint32_t>(v->get_int64());
    } else {
      return parse_error("invalid type for `protocol_version`, expected u32");
    }
  }
  const auto* runtime = ext->if_contains("runtime");
  if (runtime == nullptr) return parse_error("missing field `runtime`");
  if (!runtime->is_string() || runtime->get_string() != "process") {
    const std::string shown = runtime->is_string() ? std::string(runtime->get_string()) : wire::to_json(*runtime);
    return parse_error("unknown variant `" + shown + "`, expected `process`");
  }
  m.runtime = "process";
  const auto* command = ext->if_contains("command");
  if (command == nullptr) return parse_error("missing field `command`");
  if (!command->is_string()) return parse_error("invalid type for `command`, expected a string");
  m.command = std::string(command->get_string());
  auto args = string_list(*ext, "args");
  if (!args) return std::move(args).error();
  m.args = std::move(args).value();
  auto perms = string_list(*ext, "permissions");
  if (!perms) return std::move(perms).error();
  m.permissions = std::move(perms).value();

  const std::string ext_name = "Extension '" + m.id + "'";
  if (m.protocol_version != 1) {
    return Error::manifest(ext_name + " uses unsupported protocol_version " + std::to_string(m.protocol_version) +
                           " (supported: 1)");
  }
  if (util::trim(m.command).empty()) return Error::manifest(ext_name + " has empty command");
  return std::optional<Manifest>(std::move(m));
}

std::string resolve_command(const Manifest& m) {
  const std::string command(util::trim(m.command));
  if (command.empty() || command.front() == '/') return command;
  if (command.find('/') == std::string::npos) return command;
  return (m.plugin_dir / command).lexically_normal().string();
}

std::vector<std::string> resolve_args(const Manifest& m) {
  std::error_code ec;
  const fs::path root = fs::canonical(m.plugin_dir, ec);
  std::vector<std::string> out;
  for (const auto& arg : m.args) {
    if (!ec && !arg.empty()) {
      std::error_code ec2;
      const fs::path candidate = fs::canonical(m.plugin_dir / arg, ec2);
      if (!ec2) {
        const auto rel = candidate.lexically_relative(root);
        if (!rel.empty() && *rel.begin() != "..") {
          out.push_back(candidate.string());
          continue;
        }
      }
    }
    out.push_back(arg);
  }
  return out;
}

}  // namespace exthost::host

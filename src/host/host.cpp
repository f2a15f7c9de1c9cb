#include "exthost/host.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <csignal>
#include <map>
#include <mutex>
#include <thread>

#include "host/manifest.hpp"
#include "runtime/process_extension.hpp"
#include "wire/json.hpp"

namespace exthost {
namespace asio = boost::asio;

struct Host::Impl {
  HostOptions options;
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  mutable std::mutex mutex;  // guards extensions
  std::map<std::string, std::shared_ptr<runtime::ProcessExtension>> extensions;

  runtime::Timeouts timeouts() const {
    runtime::Timeouts t;
    t.tool_call = options.tool_call_timeout;
    t.initialize = options.initialize_timeout;
    t.other = options.other_timeout;
    t.shutdown_request = options.shutdown_request_timeout;
    t.shutdown_grace = options.shutdown_grace;
    return t;
  }

  std::shared_ptr<runtime::ProcessExtension> find(const std::string& id) const {
    std::lock_guard lock(mutex);
    auto it = extensions.find(id);
    return it == extensions.end() ? nullptr : it->second;
  }

  // Runs `coro` on the I/O thread and waits for its result.
  template <class T>
  T run(asio::awaitable<T> coro) {
    return asio::co_spawn(io, std::move(coro), asio::use_future).get();
  }
};

namespace {

asio::awaitable<Result<ExtensionInfo>> load_on_io(Host::Impl* impl, std::filesystem::path plugin_dir) {
  auto manifest = host::read_manifest(plugin_dir);
  if (!manifest) co_return std::move(manifest).error();
  if (!manifest->has_value()) {
    co_return Error::manifest("plugin '" + std::filesystem::absolute(plugin_dir).filename().string() +
                              "' declares no extension (no 'extension' block in " + host::k_manifest_path + ")");
  }
  const host::Manifest& m = **manifest;
  if (impl->find(m.id)) co_return Error::usage("Extension '" + m.id + "' is already loaded");

  runtime::ProcessSpec spec;
  spec.id = m.id;
  spec.command = host::resolve_command(m);
  spec.args = host::resolve_args(m);
  spec.cwd = m.plugin_dir;
  const auto started = std::chrono::steady_clock::now();
  auto spawned = co_await runtime::ProcessExtension::spawn(impl->io.get_executor(), std::move(spec), impl->timeouts());
  if (!spawned) co_return std::move(spawned).error();
  auto ext = std::move(spawned).value();
  auto init = co_await ext->initialize(m.plugin_dir, boost::json::object());
  const auto answered = std::chrono::steady_clock::now();
  if (!init) {
    std::string message = init.error().message;
    const ErrorKind kind = init.error().kind;
    const std::string tail = ext->stderr_tail();
    co_await ext->shutdown();  // A9: any failure after spawn stops the child
    if (!tail.empty()) message += "\nstderr tail of extension '" + m.id + "':\n" + tail;
    co_return Error{kind, std::move(message)};
  }
  ExtensionInfo info;
  info.id = m.id;
  info.init_ms = std::chrono::duration<double, std::milli>(answered - started).count();
  for (const auto& tool : init->tools) {
    info.tools.push_back(ToolInfo{tool.name, tool.description, wire::to_json(tool.input_schema)});
  }
  const auto snap = ext->lifecycle_snapshot();
  info.generation = snap ? snap->generation : 0;
  info.health = ext->health();
  {
    std::lock_guard lock(impl->mutex);
    impl->extensions[m.id] = ext;
  }
  co_return info;
}

asio::awaitable<Result<std::string>> call_tool_on_io(std::shared_ptr<runtime::ProcessExtension> ext, std::string tool,
                                                     std::string input_json) {
  wire::JsonParser parser;
  auto input = parser.parse(input_json.empty() ? std::string("{}") : input_json);
  if (!input) {
    co_return Error::usage("Extension '" + ext->id() + "' method 'tool.call': invalid input JSON: " +
                           input.error().message);
  }
  auto result = co_await ext->call_tool_for(std::move(tool), std::move(input).value(), std::nullopt, std::nullopt);
  if (!result) co_return std::move(result).error();
  co_return wire::to_json(result.value());
}

asio::awaitable<void> stop_on_io(std::shared_ptr<runtime::ProcessExtension> ext) { co_await ext->shutdown(); }

}  // namespace

Host::Host(HostOptions options) : m_impl(std::make_unique<Impl>()) {
  std::signal(SIGPIPE, SIG_IGN);
  m_impl->options = options;
  m_impl->thread = std::thread([impl = m_impl.get()] { impl->io.run(); });
}

Host::~Host() {
  shutdown_all();
  m_impl->work.reset();
  m_impl->io.stop();
  m_impl->thread.join();
}

Result<ExtensionInfo> Host::load(const std::filesystem::path& plugin_dir) {
  return m_impl->run(load_on_io(m_impl.get(), plugin_dir));
}

Result<std::string> Host::call_tool(const std::string& id, const std::string& tool, const std::string& input_json) {
  auto ext = m_impl->find(id);
  if (!ext) return Error::usage("Extension '" + id + "' not found");
  return m_impl->run(call_tool_on_io(std::move(ext), tool, input_json));
}

Result<void> Host::unload(const std::string& id) {
  std::shared_ptr<runtime::ProcessExtension> ext;
  {
    std::lock_guard lock(m_impl->mutex);
    auto it = m_impl->extensions.find(id);
    if (it == m_impl->extensions.end()) return Error::usage("Extension '" + id + "' not found");
    ext = std::move(it->second);
    m_impl->extensions.erase(it);
  }
  m_impl->run(stop_on_io(std::move(ext)));
  return {};
}

void Host::shutdown_all() {
  std::map<std::string, std::shared_ptr<runtime::ProcessExtension>> all;
  {
    std::lock_guard lock(m_impl->mutex);
    all.swap(m_impl->extensions);
  }
  std::vector<std::future<void>> stops;
  for (auto& [id, ext] : all) stops.push_back(asio::co_spawn(m_impl->io, stop_on_io(ext), asio::use_future));
  for (auto& f : stops) f.get();
}

std::optional<Lifecycle> Host::lifecycle(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return ext->lifecycle_snapshot();
}

std::optional<Health> Host::health(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  return ext->health();
}

std::string Host::stderr_tail(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return {};
  return m_impl->run([](std::shared_ptr<runtime::ProcessExtension> e) -> asio::awaitable<std::string> {
    co_return e->stderr_tail();
  }(ext));
}

std::optional<int> Host::child_pid(const std::string& id) const {
  auto ext = m_impl->find(id);
  if (!ext) return std::nullopt;
  auto pid = m_impl->run(
      [](std::shared_ptr<runtime::ProcessExtension> e) -> asio::awaitable<std::optional<int>> {
        auto c = e->child();
        if (!c) co_return std::nullopt;
        co_return static_cast<int>(c->pid());
      }(ext));
  return pid;
}

}  // namespace exthost

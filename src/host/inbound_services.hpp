// host/inbound_services.hpp — the host's answers to an extension's own requests (SPEC §4):
// memory.append / memory.query on the memory store, config.get / config.set /
// config.subscribe on the plugin's config store, each under its permission.
//
// One InboundServices per loaded extension; the runtime calls handle() on the I/O thread,
// one task per request (never on the reader). Store work runs on the host's store workers,
// so a slow disk delays only the request that waits for it, never another frame.
// Permissions are fixed at construction, before initialize is sent, because an extension
// may make these requests while it initializes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "host/permission.hpp"
#include "rpc/inbox.hpp"
#include "store/memory_store.hpp"

namespace exthost::host {

// The memory database, opened on first use and shared by every extension of a host.
// Thread safety: any thread.
class SharedMemoryStore {
 public:
  explicit SharedMemoryStore(std::filesystem::path path) : m_path(std::move(path)) {}
  Result<store::MemoryStore*> get();

 private:
  std::filesystem::path m_path;
  std::mutex m_mutex;  // guards m_store
  std::unique_ptr<store::MemoryStore> m_store;
};

class InboundServices final : public rpc::InboundHandler {
 public:
  // `workers` runs the blocking store calls; `plugin_config_file` is <home>/plugins/<id>/config.
  InboundServices(std::string extension_id, PermissionSet permissions, std::shared_ptr<SharedMemoryStore> memory,
                  std::filesystem::path plugin_config_file, boost::asio::any_io_executor workers);

  boost::asio::awaitable<rpc::InboundReply> handle(std::string method, boost::json::value params) override;

 private:
  boost::asio::awaitable<rpc::InboundReply> memory_append(boost::json::value params);
  boost::asio::awaitable<rpc::InboundReply> memory_query(boost::json::value params);
  boost::asio::awaitable<rpc::InboundReply> config_get(boost::json::value params);
  boost::asio::awaitable<rpc::InboundReply> config_set(boost::json::value params);

  std::string m_id;
  PermissionSet m_permissions;
  std::shared_ptr<SharedMemoryStore> m_memory;
  std::filesystem::path m_plugin_config_file;
  boost::asio::any_io_executor m_workers;
};

}  // namespace exthost::host

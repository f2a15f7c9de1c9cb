// Inbound requests from real extensions to the memory and config stores (SPEC §4.6, §8.17).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "../support/plugin_dir.hpp"
#include "exthost/host.hpp"
#include "store/memory_store.hpp"

namespace {

namespace fs = std::filesystem;
using exthost::testing::read_text;
using exthost::testing::TempRoot;
using exthost::testing::write_fake_plugin;

class InboundTest : public ::testing::Test {
 protected:
  exthost::HostOptions options() { return exthost::testing::isolated_options(root.path() / "home"); }
  TempRoot root{"inbound"};
};

TEST_F(InboundTest, AnExtensionCanAppendAndQueryWithinItsNamespace) {
  const auto dir = write_fake_plugin(root.path(), "memory-test-ext", {"memory"},
                                     R"({"permissions":["tools.register","memory.write","memory.read"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_TRUE(info) << info.error().message;
  auto store = exthost::store::MemoryStore::open(root.path() / "home" / "memory" / "memory.db");
  ASSERT_TRUE(store);
  auto records = (*store)->query(exthost::store::MemoryQuery{"memory-test-ext", {}, {}, {}, {}, {}});
  ASSERT_TRUE(records);
  ASSERT_EQ(records->records.size(), 1u);
  EXPECT_EQ(records->records.at(0).content, "hello memory");
  EXPECT_EQ(records->records.at(0).tags, std::vector<std::string>{"@test"});
  EXPECT_GT(host.stats("memory-test-ext")->inbound_requests, 1u);
}

TEST_F(InboundTest, AnExtensionWithoutWritePermissionCannotAppend) {
  const auto dir = write_fake_plugin(root.path(), "memory-test-ext", {"memory"}, R"({"permissions":["tools.register","memory.read"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("memory.append failed: permission denied: memory.write required"),
            std::string::npos)
      << info.error().message;
  EXPECT_TRUE(host.list().empty());
}

TEST_F(InboundTest, AnExtensionCannotUseAnotherNamespace) {
  const auto dir = write_fake_plugin(root.path(), "memory-test-ext", {"memory", "--namespace=other-ext"},
                                     R"({"permissions":["tools.register","memory.write","memory.read"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("namespace must equal extension id 'memory-test-ext' (got 'other-ext')"),
            std::string::npos)
      << info.error().message;
}

TEST_F(InboundTest, AnExtensionMayUseStringRequestIds) {
  const auto dir = write_fake_plugin(root.path(), "memory-test-ext", {"memory", "--string-ids"},
                                     R"({"permissions":["tools.register","memory.write","memory.read"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_TRUE(info) << info.error().message;
  auto store = exthost::store::MemoryStore::open(root.path() / "home" / "memory" / "memory.db");
  EXPECT_EQ((*store)->query(exthost::store::MemoryQuery{"memory-test-ext", {}, {}, {}, {}, {}})->records.size(), 1u);
}

TEST_F(InboundTest, AnExtensionCanSetAndReadItsOwnPluginConfigFile) {
  const auto dir = write_fake_plugin(root.path(), "config-test-ext", {"config"},
                                     R"({"permissions":["tools.register","config.write","config.subscribe"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(read_text(root.path() / "home" / "plugins" / "config-test-ext" / "config"), "backend = cpu\n");
}

TEST_F(InboundTest, ReadingConfigNeedsNoWritePermission) {
  const auto dir = write_fake_plugin(root.path(), "config-test-ext", {"config", "--no-set"},
                                     R"({"permissions":["tools.register","config.subscribe"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  EXPECT_TRUE(info) << info.error().message;
}

TEST_F(InboundTest, AnExtensionWithoutWritePermissionCannotSetConfig) {
  const auto dir = write_fake_plugin(root.path(), "config-test-ext", {"config"}, R"({"permissions":["tools.register","config.subscribe"]})");
  exthost::Host host(options());
  auto info = host.load(dir);
  ASSERT_FALSE(info);
  EXPECT_NE(info.error().message.find("config.set failed: permission denied: config.write required"), std::string::npos)
      << info.error().message;
  EXPECT_FALSE(fs::exists(root.path() / "home" / "plugins" / "config-test-ext" / "config"));
}

TEST_F(InboundTest, AConfigStoreThatIsNotARegularFileIsAStorageErrorNotAWait) {
  const fs::path store = root.path() / "home" / "plugins" / "config-test-ext" / "config";
  fs::create_directories(store.parent_path());
  ASSERT_EQ(::mkfifo(store.c_str(), 0600), 0);
  auto o = options();
  o.initialize_timeout = std::chrono::seconds(5);
  exthost::Host host(o);
  const std::string refused = "config io error: " + store.string() + " is not a regular file (a FIFO)";
  auto set = host.load(write_fake_plugin(root.path(), "config-test-ext", {"config"},
                                         R"({"permissions":["tools.register","config.write","config.subscribe"]})"));
  auto get = host.load(write_fake_plugin(root.path(), "config-test-ext", {"config", "--no-set"},
                                         R"({"permissions":["tools.register","config.subscribe"]})"));
  // Wakes a store worker that would still be waiting on the FIFO, so the host can stop.
  if (const int fd = ::open(store.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC); fd >= 0) ::close(fd);
  ASSERT_FALSE(set);
  EXPECT_NE(set.error().message.find("config.set failed: " + refused), std::string::npos) << set.error().message;
  ASSERT_FALSE(get);
  EXPECT_NE(get.error().message.find("config.get failed: " + refused), std::string::npos) << get.error().message;
}

TEST_F(InboundTest, UnknownInboundMethodsAreNotFound) {
  // The "inbound" fixture sends two requests for "no.such.method" and returns the replies.
  const auto dir = write_fake_plugin(root.path(), "asker", {"inbound"});
  exthost::Host host(options());
  ASSERT_TRUE(host.load(dir));
  auto r = host.call_tool("asker", "echo", "{}");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->find(R"("error":{"code":-32601,"message":"method not found: no.such.method"})"), std::string::npos) << *r;
  EXPECT_NE(r->find(R"("id":"evt-1000")"), std::string::npos) << *r;
}

}  // namespace

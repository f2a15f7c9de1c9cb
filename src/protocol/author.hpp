// protocol/author.hpp — who a tool call is made for (SPEC §5.12): sent as tool.call's caller.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>

namespace exthost::protocol {

struct Author {
  std::string actor;                  // "actor-" + 32 lowercase hex digits
  std::string group;                  // "group-" + 32 lowercase hex digits
  std::optional<std::string> parent;  // set for a worker: the actor of the chat that made it

  // A new actor in a new group.
  static Author fresh();
  // A worker of this author: a new actor, the same group, this actor as parent.
  Author child() const;
  // Actor and group well formed; parent, when present, a well-formed actor other than this.
  bool valid() const;
  // {"actor","group"} or {"actor","group","parent"}.
  boost::json::value to_json() const;
  // Strict: unknown fields are refused; nullopt on any error.
  static std::optional<Author> from_json(const boost::json::value& v);

  friend bool operator==(const Author&, const Author&) = default;
};

}  // namespace exthost::protocol

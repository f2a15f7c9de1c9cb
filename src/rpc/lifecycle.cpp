#include "rpc/lifecycle.hpp"

namespace exthost::rpc {

std::optional<exthost::Lifecycle> Lifecycle::snapshot(bool recovered) {
  if (live()) {
    std::unique_lock lock(m_child_mutex, std::try_to_lock);
    if (!lock.owns_lock()) return std::nullopt;
    if (!m_probe || m_probe->exited()) invalidate();
  }
  exthost::Lifecycle out;
  out.generation = generation();
  if ((out.generation & 1) != 0) {
    out.health = Health::failed;
  } else if (!initialized()) {
    out.health = Health::loaded;
  } else if (recovered) {
    out.health = Health::degraded;
  } else {
    out.health = Health::running;
  }
  return out;
}

}  // namespace exthost::rpc

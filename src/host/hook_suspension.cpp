#include "host/hook_suspension.hpp"

namespace exthost::host {

HookSuspension::Admission HookSuspension::admit(time_point now) {
  if (!m_until) return Admission::ask;
  if (m_probing || now < *m_until) return Admission::skip;
  m_probing = true;
  return Admission::probe;
}

void HookSuspension::answered() {
  m_timeouts = 0;
  m_until.reset();
  m_probing = false;
}

bool HookSuspension::timed_out(time_point now, bool probe) {
  ++m_timeouts;
  // An answer that came in meanwhile has already cleared the probe.
  const bool failed_probe = probe && m_probing;
  if (failed_probe) {
    m_probing = false;
  } else if (m_until || m_timeouts < k_hook_suspend_after_timeouts) {
    return false;  // below the count, or a late ask that began before the suspension
  }
  m_until = now + k_hook_suspend_interval;
  return true;
}

void HookSuspension::probe_abandoned() { m_probing = false; }

}  // namespace exthost::host

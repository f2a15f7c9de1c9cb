// exthost/serve.hpp — the host API as JSON-RPC 2.0 over a pair of file descriptors, with
// the same Content-Length framing extensions use, so that a program in any language can
// embed exthost by spawning `exthost serve`. docs/serve.md gives every method's shape.
#pragma once

#include "exthost/host.hpp"

namespace exthost {

struct ServeOptions {
  HostOptions host;
  int input_fd = 0;   // requests arrive here
  int output_fd = 1;  // replies and notifications go here, one writer at a time
  int stop_fd = -1;  // readable: stop as if the input ended; each later byte: kill every extension now
};

// Serves requests until `host.shutdown` or the end of the input, then stops every
// extension. Requests run concurrently (up to k_max_serve_in_flight at once; past that the
// input is not read until one finishes), so replies may come in any order. Returns 0 after
// a clean end, 1 when the input broke the framing.
int serve(const ServeOptions& options);

// How many requests one server runs at once: enough for every extension to be busy, few
// enough that a client flooding requests cannot make the host start threads without bound.
inline constexpr int k_max_serve_in_flight = 64;

}  // namespace exthost

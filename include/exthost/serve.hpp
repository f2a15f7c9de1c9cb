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

// Serves requests until `host.shutdown`, the end of the input or a byte on stop_fd, then
// stops every extension, cancelling the calls still running (each is answered with its
// error). Requests run concurrently (up to k_max_serve_in_flight at once; past that, or
// while the output is backed up, the input is not read), so replies may come in any order;
// one thread of its own writes the output, so a slow client never holds the host's I/O
// thread. A client's notification "$/cancelRequest" {"id": <its request's id>} cancels that
// request while it runs (reply -32800 "request cancelled"). Returns 0 after a clean end, 1
// when the input broke the framing.
int serve(const ServeOptions& options);

// How many requests one server runs at once: enough for every extension to be busy, few
// enough that a client flooding requests cannot make the host start threads without bound.
inline constexpr int k_max_serve_in_flight = 64;

}  // namespace exthost

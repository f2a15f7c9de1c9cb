/* exthost-bench-hook-subscriber — the smallest hook extension, for the benchmark's hook
 * figures: initialize registers nothing (the manifest subscribes it), hook.handle answers
 * {"action":"continue"}, shutdown null, any other request -32601. It ends with status 0 on
 * the exit notification or at the end of its input. Replies are written when no further
 * request is already buffered. */
#include <stdio.h>

#include "frame_io.h"

static frame_writer out = {.fd = 1};

static void reply(span_t id, const char *tail) {
  const span_t parts[] = {span_of("{\"jsonrpc\":\"2.0\",\"id\":"), id, span_of(tail)};
  frame_put(&out, parts, 3);
}

int main(void) {
  frame_io_set_program("exthost-bench-hook-subscriber");
  frame_reader in = {.fd = 0, .flush_before_read = &out};
  size_t n;
  const char *body;
  while ((body = frame_read(&in, &n))) {
    const span_t msg = {body, n};
    span_t id, method;
    if (json_member(msg, "method", &method)) {
      fprintf(stderr, "exthost-bench-hook-subscriber: a frame without a method, ignored\n");
      continue;
    }
    if (json_member(msg, "id", &id)) {
      if (span_is(method, "\"exit\"")) break;
      continue;
    }
    if (span_is(method, "\"hook.handle\"")) {
      reply(id, ",\"result\":{\"action\":\"continue\"}}");
    } else if (span_is(method, "\"initialize\"")) {
      reply(id, ",\"result\":{\"protocol_version\":1,\"capabilities\":{}}}");
    } else if (span_is(method, "\"shutdown\"")) {
      reply(id, ",\"result\":null}");
    } else {
      reply(id, ",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}");
    }
  }
  frame_flush(&out);
  return 0;
}

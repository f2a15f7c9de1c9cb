/* exthost-bench-handshake — lets an extension of the anchors' wire contract (which answers
 * initialize with empty capabilities) be called through exthost's public API:
 *
 *   exthost-bench-handshake STATUS_FILE CONCURRENCY EXT [ARGS...]
 *
 * It reads the initialize request from stdin, exactly that frame and not a byte more, and
 * answers it in EXT's place, declaring the anchors' tool "echo" (the Host calls only tools
 * an extension registered) and capabilities.concurrency CONCURRENCY. Then it starts EXT
 * on the same stdin, stdout and stderr and steps out of the way: every later frame goes
 * between the host and EXT directly, this process only waits for EXT. When EXT ends, it
 * writes how it ended to STATUS_FILE ("exit 0", "exit N", "signal N") and ends the same
 * way, so the benchmark can check that EXT exited 0 after the host's shutdown. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame_io.h"

/* The concurrency a protocol-1 extension may declare. */
#define MAX_CONCURRENCY 64

int main(int argc, char **argv) {
  frame_io_set_program("exthost-bench-handshake");
  if (argc < 4) die("usage: exthost-bench-handshake STATUS_FILE CONCURRENCY EXT [ARGS...]");
  const char *status_file = argv[1];
  const long concurrency = strtol(argv[2], NULL, 10);
  if (concurrency < 1 || concurrency > MAX_CONCURRENCY) die("CONCURRENCY must be 1 to %d", MAX_CONCURRENCY);

  frame_writer out = {.fd = 1};
  frame_reader in = {.fd = 0, .exact = 1};
  size_t n;
  const char *body = frame_read(&in, &n);
  if (!body) die("input ended before initialize");
  const span_t msg = {body, n};
  span_t id, method;
  if (json_member(msg, "id", &id) || json_member(msg, "method", &method) || !span_is(method, "\"initialize\"")) {
    die("the first frame is not an initialize request: %.*s", (int)(n > 200 ? 200 : n), body);
  }
  char tail[512];
  const int tn = snprintf(tail, sizeof tail,
                          ",\"result\":{\"protocol_version\":1,\"capabilities\":{\"tools\":[{\"name\":\"echo\","
                          "\"description\":\"Echoes its input (answered by the wrapped extension)\","
                          "\"input_schema\":{\"type\":\"object\"}}],\"concurrency\":%ld}}}",
                          concurrency);
  const span_t parts[] = {span_of("{\"jsonrpc\":\"2.0\",\"id\":"), id, {tail, (size_t)tn}};
  frame_put(&out, parts, 3);
  frame_flush(&out);

  const pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    execvp(argv[3], argv + 3);
    fprintf(stderr, "exthost-bench-handshake: cannot run %s: %s\n", argv[3], strerror(errno));
    _exit(127);
  }
  /* The host must see EXT's end of the pipes as the only one. */
  close(0);
  close(1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) die("waitpid: %s", strerror(errno));
  }
  FILE *f = fopen(status_file, "w");
  if (!f) die("cannot write %s: %s", status_file, strerror(errno));
  if (WIFEXITED(status)) {
    fprintf(f, "exit %d\n", WEXITSTATUS(status));
  } else {
    fprintf(f, "signal %d\n", WTERMSIG(status));
  }
  fclose(f);
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* exthost-bench-serve-client — times `tool.call` through `exthost serve` from a plain C
 * client, the way a program in another language embeds exthost (docs/serve.md):
 *
 *   exthost-bench-serve-client [--seq N] [--warmup N] [--pipe N] [--depth D]
 *                              --plugin DIR --tool NAME -- EXTHOST serve [ARGS...]
 *
 * Spawns the server on pipes, loads DIR with host.load, then measures `tool.call` of NAME
 * with the anchors' echo input: --seq sequential round trips after --warmup unrecorded ones,
 * and --pipe calls with --depth outstanding (at most 64, the requests serve runs at once).
 * Ends with host.shutdown, closes the server's input and requires it to exit 0. Every reply
 * is checked: its id, and the echoed content. Prints one line of key=value pairs:
 *   serve_seq_p50_us serve_seq_p99_us serve_seq_mean_us serve_pipe_calls_per_s */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frame_io.h"

/* Requests exthost serve runs at once (docs/serve.md, k_max_serve_in_flight). */
#define SERVE_MAX_IN_FLIGHT 64

static const char k_input[] = "{\"text\":\"hello, extension! 0123456789\"}";

typedef struct {
  long seq, warmup, pipe, depth;
  const char *plugin, *tool;
  char **server;
} options;

static frame_writer to_server;
static frame_reader from_server;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static options parse(int argc, char **argv) {
  options o = {.seq = 20000, .warmup = 2000, .pipe = 100000, .depth = 64};
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (i + 1 >= argc) die("missing value for %s", argv[i]);
    const char *a = argv[i], *v = argv[++i];
    if (strcmp(a, "--seq") == 0) o.seq = atol(v);
    else if (strcmp(a, "--warmup") == 0) o.warmup = atol(v);
    else if (strcmp(a, "--pipe") == 0) o.pipe = atol(v);
    else if (strcmp(a, "--depth") == 0) o.depth = atol(v);
    else if (strcmp(a, "--plugin") == 0) o.plugin = v;
    else if (strcmp(a, "--tool") == 0) o.tool = v;
    else die("unknown option %s", a);
  }
  if (!o.plugin || !o.tool || i >= argc) die("usage: exthost-bench-serve-client [options] --plugin DIR --tool NAME -- EXTHOST serve [ARGS...]");
  if (o.depth < 1) o.depth = 1;
  if (o.depth > SERVE_MAX_IN_FLIGHT) o.depth = SERVE_MAX_IN_FLIGHT;
  o.server = argv + i;
  return o;
}

static pid_t spawn_server(char **argv) {
  int in[2], out[2];
  if (pipe(in) || pipe(out)) die("pipe: %s", strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execvp(argv[0], argv);
    fprintf(stderr, "exthost-bench-serve-client: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_server.fd = in[1];
  from_server.fd = out[0];
  from_server.flush_before_read = &to_server;
  return pid;
}

/* `text` as a JSON string, quotes included (the paths this sends are short). */
static void json_string(const char *text, char *out, size_t cap) {
  size_t n = 0;
  out[n++] = '"';
  for (const char *p = text; *p; p++) {
    if (n + 8 >= cap) die("string too long: %s", text);
    const unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\') {
      out[n++] = '\\';
      out[n++] = (char)c;
    } else if (c < 0x20) {
      n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
    } else {
      out[n++] = (char)c;
    }
  }
  out[n++] = '"';
  out[n] = '\0';
}

static void put_request(unsigned long long id, const char *method, const char *params) {
  char head[96];
  const int hn = snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%llu,\"method\":\"%s\",\"params\":", id, method);
  const span_t parts[] = {{head, (size_t)hn}, span_of(params), span_of("}")};
  frame_put(&to_server, parts, 3);
}

/* The next reply: its id, and its result (an error ends the run with its text). */
static unsigned long long next_reply(span_t *result) {
  size_t n;
  const char *body = frame_read(&from_server, &n);
  if (!body) die("the server ended its output early");
  const span_t msg = {body, n};
  span_t id, error;
  if (json_member(msg, "id", &id)) die("a frame without an id: %.*s", (int)(n > 300 ? 300 : n), body);
  if (json_member(msg, "error", &error) == 0) die("error reply: %.*s", (int)error.n, error.p);
  if (json_member(msg, "result", result)) die("a reply without a result: %.*s", (int)(n > 300 ? 300 : n), body);
  char digits[32];
  if (id.n == 0 || id.n >= sizeof digits) die("unexpected id %.*s", (int)id.n, id.p);
  memcpy(digits, id.p, id.n);
  digits[id.n] = '\0';
  char *end;
  const unsigned long long v = strtoull(digits, &end, 10);
  if (*end) die("unexpected id %s", digits);
  return v;
}

/* tool.call answers {"result": <the tool's result>}; the anchors' echo is {"content": input}. */
static void check_echo(span_t result) {
  span_t tool_result, content;
  if (json_member(result, "result", &tool_result) || json_member(tool_result, "content", &content) ||
      !span_is(content, k_input)) {
    die("bad echo: %.*s", (int)result.n, result.p);
  }
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  frame_io_set_program("exthost-bench-serve-client");
  signal(SIGPIPE, SIG_IGN);
  const options o = parse(argc, argv);
  const pid_t server = spawn_server(o.server);

  char path[4200], tool[600], params[5000];
  json_string(o.plugin, path, sizeof path);
  json_string(o.tool, tool, sizeof tool);
  unsigned long long id = 1;
  snprintf(params, sizeof params, "{\"path\":%s}", path);
  put_request(id, "host.load", params);
  span_t result;
  if (next_reply(&result) != id) die("host.load: a reply to another request");
  id++;

  snprintf(params, sizeof params, "{\"tool\":%s,\"input\":%s}", tool, k_input);
  double p50 = 0, p99 = 0, mean = 0;
  if (o.seq > 0) {
    double *lat = malloc(sizeof(double) * (size_t)o.seq);
    if (!lat) die("out of memory");
    for (long i = 0; i < o.warmup + o.seq; i++, id++) {
      const double s = now_us();
      put_request(id, "tool.call", params);
      const unsigned long long got = next_reply(&result);
      const double e = now_us();
      if (got != id) die("tool.call: reply %llu to request %llu", got, id);
      check_echo(result);
      if (i >= o.warmup) lat[i - o.warmup] = e - s;
    }
    qsort(lat, (size_t)o.seq, sizeof(double), by_value);
    p50 = lat[o.seq / 2];
    p99 = lat[o.seq * 99 / 100 < o.seq - 1 ? o.seq * 99 / 100 : o.seq - 1];
    for (long i = 0; i < o.seq; i++) mean += lat[i];
    mean /= (double)o.seq;
    free(lat);
  }

  double calls_per_s = 0;
  if (o.pipe > 0) {
    unsigned char *seen = calloc((size_t)o.pipe, 1);
    if (!seen) die("out of memory");
    const unsigned long long base = id;
    long sent = 0, done = 0;
    const double s = now_us();
    for (; sent < o.depth && sent < o.pipe; sent++) put_request(base + (unsigned long long)sent, "tool.call", params);
    while (done < o.pipe) {
      const unsigned long long got = next_reply(&result);
      if (got < base || got >= base + (unsigned long long)o.pipe || seen[got - base]) die("tool.call: unexpected reply id %llu", got);
      seen[got - base] = 1;
      check_echo(result);
      done++;
      if (sent < o.pipe) {
        put_request(base + (unsigned long long)sent, "tool.call", params);
        sent++;
      }
    }
    calls_per_s = (double)o.pipe / ((now_us() - s) / 1e6);
    id = base + (unsigned long long)o.pipe;
    free(seen);
  }

  put_request(id, "host.shutdown", "{}");
  if (next_reply(&result) != id) die("host.shutdown: a reply to another request");
  close(to_server.fd);
  size_t n;
  while (frame_read(&from_server, &n)) {
  }
  int status = 0;
  while (waitpid(server, &status, 0) < 0) {
    if (errno != EINTR) die("waitpid: %s", strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("exthost serve did not exit 0 (status %d)", status);
  printf("serve_seq_p50_us=%.1f serve_seq_p99_us=%.1f serve_seq_mean_us=%.1f serve_pipe_calls_per_s=%.0f\n", p50, p99,
         mean, calls_per_s);
  return 0;
}

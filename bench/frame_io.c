#define _POSIX_C_SOURCE 200809L
#include "frame_io.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* All header lines of one frame together, blank line included. */
#define FRAME_MAX_HEADERS ((size_t)64 * 1024)

static const char *g_program = "frame_io";

void frame_io_set_program(const char *program) { g_program = program; }

_Noreturn void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", g_program);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static size_t available(const frame_reader *r) { return r->end - r->start; }

/* Reads until `need` bytes are available from r->start; 0 when the input ends first. */
static int read_until(frame_reader *r, size_t need) {
  if (r->cap - r->start < need) {
    memmove(r->buf, r->buf + r->start, available(r));
    r->end -= r->start;
    r->start = 0;
    if (r->cap < need) {
      size_t cap = r->cap ? r->cap : 65536;
      while (cap < need) cap *= 2;
      char *grown = realloc(r->buf, cap);
      if (!grown) die("out of memory for a frame of %zu bytes", need);
      r->buf = grown;
      r->cap = cap;
    }
  }
  while (available(r) < need) {
    if (r->flush_before_read) frame_flush(r->flush_before_read);
    const size_t ask = r->exact ? need - available(r) : r->cap - r->end;
    const ssize_t k = read(r->fd, r->buf + r->end, ask);
    if (k < 0) {
      if (errno == EINTR) continue;
      die("read: %s", strerror(errno));
    }
    if (k == 0) return 0;
    r->end += (size_t)k;
  }
  return 1;
}

/* The value of a Content-Length header line (without its line ending); -1 for another header. */
static long long content_length_of(const char *line, size_t n) {
  static const char name[] = "content-length:";
  const size_t name_len = sizeof name - 1;
  if (n < name_len || strncasecmp(line, name, name_len) != 0) return -1;
  size_t i = name_len;
  while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i == n) die("empty Content-Length");
  unsigned long long v = 0;
  for (; i < n && line[i] >= '0' && line[i] <= '9'; i++) {
    v = v * 10 + (unsigned long long)(line[i] - '0');
    if (v > FRAME_MAX_BODY) die("frame body over %zu bytes", FRAME_MAX_BODY);
  }
  while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i != n) die("invalid Content-Length: %.*s", (int)n, line);
  return (long long)v;
}

const char *frame_read(frame_reader *r, size_t *len) {
  long long length = -1;
  size_t pos = 0; /* bytes of headers consumed, from r->start */
  for (;;) {
    const char *from = r->buf ? r->buf + r->start + pos : NULL;
    const char *nl = from ? memchr(from, '\n', available(r) - pos) : NULL;
    if (!nl) {
      if (available(r) - pos >= FRAME_MAX_HEADER_LINE) die("header line over %d bytes", FRAME_MAX_HEADER_LINE);
      if (!read_until(r, available(r) + 1)) {
        if (available(r) == 0) return NULL;
        die("input ended inside a frame's headers");
      }
      continue;
    }
    size_t line_len = (size_t)(nl - from);
    pos += line_len + 1;
    if (line_len + 1 > FRAME_MAX_HEADER_LINE) die("header line over %d bytes", FRAME_MAX_HEADER_LINE);
    if (pos > FRAME_MAX_HEADERS) die("frame headers over %zu bytes", FRAME_MAX_HEADERS);
    if (line_len > 0 && from[line_len - 1] == '\r') line_len--;
    if (line_len == 0) break;
    const long long v = content_length_of(from, line_len);
    if (v >= 0) length = v;
  }
  if (length < 0) die("frame without Content-Length");
  if (!read_until(r, pos + (size_t)length)) die("input ended inside a frame body");
  const char *body = r->buf + r->start + pos;
  r->start += pos + (size_t)length;
  *len = (size_t)length;
  return body;
}

static void append(frame_writer *w, const char *p, size_t n) {
  if (w->cap - w->len < n) {
    size_t cap = w->cap ? w->cap : 65536;
    while (cap - w->len < n) cap *= 2;
    char *grown = realloc(w->buf, cap);
    if (!grown) die("out of memory for output");
    w->buf = grown;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, p, n);
  w->len += n;
}

void frame_put(frame_writer *w, const span_t *parts, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; i++) n += parts[i].n;
  char header[48];
  const int h = snprintf(header, sizeof header, "Content-Length: %zu\r\n\r\n", n);
  append(w, header, (size_t)h);
  for (size_t i = 0; i < count; i++) append(w, parts[i].p, parts[i].n);
}

void frame_flush(frame_writer *w) {
  size_t done = 0;
  while (done < w->len) {
    const ssize_t k = write(w->fd, w->buf + done, w->len - done);
    if (k < 0) {
      if (errno == EINTR) continue;
      die("write: %s", strerror(errno));
    }
    done += (size_t)k;
  }
  w->len = 0;
}

static const char *skip_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* p at an opening quote: the byte after the closing one, or NULL. */
static const char *skip_string(const char *p, const char *e) {
  for (p++; p < e; p++) {
    if (*p == '\\') {
      p++;
    } else if (*p == '"') {
      return p + 1;
    }
  }
  return NULL;
}

/* The byte after the value starting at p, or NULL when it does not end inside [p, e). */
static const char *skip_value(const char *p, const char *e) {
  if (p >= e) return NULL;
  if (*p == '"') return skip_string(p, e);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (p < e) {
      if (*p == '"') {
        p = skip_string(p, e);
        if (!p) return NULL;
        continue;
      }
      if (*p == '{' || *p == '[') depth++;
      if (*p == '}' || *p == ']') {
        if (--depth == 0) return p + 1;
      }
      p++;
    }
    return NULL;
  }
  while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') p++;
  return p;
}

int json_member(span_t json, const char *key, span_t *value) {
  const char *e = json.p + json.n;
  const size_t key_len = strlen(key);
  const char *p = skip_ws(json.p, e);
  if (p >= e || *p != '{') return -1;
  p++;
  for (;;) {
    p = skip_ws(p, e);
    if (p >= e || *p != '"') return -1;
    const char *k = p + 1;
    p = skip_string(p, e);
    if (!p) return -1;
    const size_t k_len = (size_t)(p - 1 - k);
    p = skip_ws(p, e);
    if (p >= e || *p != ':') return -1;
    p = skip_ws(p + 1, e);
    const char *v = p;
    p = skip_value(p, e);
    if (!p || p == v) return -1;
    if (k_len == key_len && memcmp(k, key, key_len) == 0) {
      value->p = v;
      value->n = (size_t)(p - v);
      return 0;
    }
    p = skip_ws(p, e);
    if (p >= e || *p != ',') return -1;
    p++;
  }
}

int span_is(span_t s, const char *text) { return s.n == strlen(text) && memcmp(s.p, text, s.n) == 0; }

span_t span_of(const char *text) {
  span_t s = {text, strlen(text)};
  return s;
}

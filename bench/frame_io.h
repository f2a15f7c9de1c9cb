/* frame_io — blocking Content-Length framing over file descriptors, and a scanner that
 * finds one member of a JSON object without decoding anything, for the benchmark's small C
 * programs (the handshake shim, the hook subscriber, the serve client). Every failure ends
 * the program with a message on stderr: these programs measure, they do not recover. */
#ifndef EXTHOST_BENCH_FRAME_IO_H
#define EXTHOST_BENCH_FRAME_IO_H

#include <stddef.h>

/* The largest frame body accepted (the protocol's own cap, 4 MiB). */
#define FRAME_MAX_BODY ((size_t)4 * 1024 * 1024)
/* The longest header line accepted, line ending included. */
#define FRAME_MAX_HEADER_LINE 1024

typedef struct {
  const char *p;
  size_t n;
} span_t;

typedef struct frame_writer {
  int fd;
  char *buf;
  size_t len, cap;
} frame_writer;

typedef struct {
  int fd;
  /* Read no byte past the frame returned: headers one byte at a time, then exactly the
   * body. For a process that hands its input on to another after one frame. */
  int exact;
  /* Flushed before every read that may block, so replies go out in batches. */
  frame_writer *flush_before_read;
  char *buf;
  size_t cap, start, end;
} frame_reader;

/* `program` prefixes every message of `die`. */
void frame_io_set_program(const char *program);
_Noreturn void die(const char *fmt, ...);

/* The next frame's body (valid until the next call), its length in *len; NULL at a clean
 * end of input between frames. */
const char *frame_read(frame_reader *r, size_t *len);

/* Queues one frame whose body is the concatenation of `count` parts. */
void frame_put(frame_writer *w, const span_t *parts, size_t count);
/* Writes everything queued. */
void frame_flush(frame_writer *w);

/* The raw text of member `key` of the JSON object in `json`; 0 when found. Keys are
 * compared as written (no escapes in the keys looked for). */
int json_member(span_t json, const char *key, span_t *value);
/* Whether `s` is exactly `text`. */
int span_is(span_t s, const char *text);
span_t span_of(const char *text);

#endif

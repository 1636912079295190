/*
 * output.c - a pod's stdout and stderr: read, split into lines, batched as
 * log.batch {pod, attempt, lines: [{ts, stream, text}]} on
 * lark.in.<node>.logs.<pod>.
 *
 * The pod writes into FIFOs in its directory that it holds open read and
 * write itself, so it never gets SIGPIPE while the agent is away (the
 * kernel buffers, then the pod blocks) and a restarted agent reopens them
 * and reads on. A line longer than LogLine's max is cut at a UTF-8
 * boundary into several; invalid UTF-8 and NUL become '?'. A batch goes
 * out at log_lines lines, at 256 KiB, or on the agent's flush timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "sender.h"
#include "utf8.h"

enum { BATCH_BYTES = 256 * 1024 };

/* Queue a message for this pod's node. */
static int
proc_send(edge_proc *p, const char *what, const char *type,
          const msgpack_sbuffer *sb) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.in.%s.%s.%s", p->a->cfg.node, what,
           p->pod);
  edge_msg m = {subject, type, sb->data, sb->size};
  return edge_send(p->a, &m);
}

void
edge_proc_flush(edge_proc *p) {
  if (!p->nlines)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  msgpack_pack_str_with_body(&pk, "pod", 3);
  msgpack_pack_str_with_body(&pk, p->pod, strlen(p->pod));
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint32(&pk, p->attempt);
  msgpack_pack_str_with_body(&pk, "lines", 5);
  msgpack_pack_array(&pk, p->nlines);
  msgpack_sbuffer_write(&sb, p->lines.data, p->lines.size);
  proc_send(p, "logs", "log.batch", &sb);
  msgpack_sbuffer_destroy(&sb);
  msgpack_sbuffer_clear(&p->lines);
  p->nlines = 0;
}

/* One line (any length): cut into LogLine-sized pieces. */
void
edge_proc_log(edge_proc *p, const char *stream, const char *text, size_t len) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, &p->lines, msgpack_sbuffer_write);
  int64_t now = bus_wall_ns();
  do {
    size_t n = edge_utf8_cut(text, len, EDGE_LINE_MAX);
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "ts", 2);
    msgpack_pack_int64(&pk, now);
    msgpack_pack_str_with_body(&pk, "stream", 6);
    msgpack_pack_str_with_body(&pk, stream, strlen(stream));
    msgpack_pack_str_with_body(&pk, "text", 4);
    msgpack_pack_str(&pk, n);
    size_t at = p->lines.size;
    msgpack_pack_str_body(&pk, text, n);
    edge_utf8_fix(p->lines.data + at, n);
    p->nlines++;
    if (p->nlines >= (uint32_t)p->a->cfg.log_lines ||
        p->lines.size >= BATCH_BYTES)
      edge_proc_flush(p);
    text += n;
    len -= n;
  } while (len > 0);
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h, (void)hint;
  static char chunk[65536]; /* loop thread only; consumed in on_read */
  *buf = uv_buf_init(chunk, sizeof chunk);
}

static edge_stream *
stream_of(uv_stream_t *h) {
  return (edge_stream *)(void *)((char *)h - offsetof(edge_stream, pipe));
}

static void
take_bytes(edge_stream *s, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (b[i] == '\n') {
      size_t l = s->len;
      if (l && s->line[l - 1] == '\r')
        l--;
      edge_proc_log(s->p, s->name, s->line, l);
      s->len = 0;
      continue;
    }
    s->line[s->len++] = b[i];
    if (s->len == EDGE_LINE_MAX) { /* a long line: send what we have */
      size_t cut = edge_utf8_cut(s->line, s->len, EDGE_LINE_MAX - 4);
      edge_proc_log(s->p, s->name, s->line, cut);
      memmove(s->line, s->line + cut, s->len - cut);
      s->len -= cut;
    }
  }
}

static void
on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
  edge_stream *s = stream_of(h);
  if (n > 0) {
    take_bytes(s, buf->base, (size_t)n);
    return;
  }
  if (n == 0 || n == UV_EAGAIN)
    return;
  /* EOF (every writer is gone) or an error: the rest is a last line */
  if (s->len)
    edge_proc_log(s->p, s->name, s->line, s->len);
  s->len = 0;
  s->eof = 1;
  edge_stream_close(s);
}

int
edge_stream_open(edge_proc *p, edge_stream *s, const char *path,
                 const char *name) {
  s->p = p;
  s->name = name;
  s->len = 0;
  s->eof = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return bus_error(-errno, "open %s", path);
  uv_pipe_init(p->a->loop, &s->pipe, 0);
  s->pipe.data = p;
  s->open = 1;
  p->handles++;
  int rc = uv_pipe_open(&s->pipe, fd);
  if (rc)
    close(fd);
  else
    rc = uv_read_start((uv_stream_t *)&s->pipe, on_alloc, on_read);
  if (rc) {
    edge_stream_close(s);
    return bus_error(BUS_EINVAL, "read %s: %s", path, uv_strerror(rc));
  }
  return 0;
}

void
edge_stream_close(edge_stream *s) {
  if (!s->open)
    return;
  s->open = 0;
  uv_close((uv_handle_t *)&s->pipe, edge_proc_handle_closed);
}

void
edge_output_flush_all(edge_agent *a) {
  for (edge_proc *p = a->procs; p; p = p->next)
    edge_proc_flush(p);
}

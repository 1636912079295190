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
 * out at log_lines lines, at 256 KiB, or on the agent's flush timer; and
 * when the process ends, what it left in its FIFOs goes out before its
 * end is reported (edge_stream_drain), on the node's one ordered queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "output.h"
#include "sender.h"
#include "utf8.h"

enum { BATCH_BYTES = 256 * 1024 };

void
edge_proc_flush(edge_proc *p) {
  if (!p->nlines)
    return;
  char subject[BUS_SUBJECT_MAX];
  bus_log_line *lines = malloc(p->nlines * sizeof *lines);
  bus_ev_log_batch d = {.pod = bus_str_of(p->pod),
                        .has_attempt = 1,
                        .attempt = p->attempt,
                        .lines = {lines, p->nlines}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc =
      lines ? bus_subj_log_batch_in(subject, sizeof subject, p->a->cfg.node,
                                    p->pod)
            : bus_error(-ENOMEM, "out of memory sending %u lines", p->nlines);
  for (uint32_t i = 0; !rc && i < p->nlines; i++) {
    const edge_line *l = &p->lines[i];
    lines[i] = (bus_log_line){
        l->ts, bus_str_of(l->stream), {p->text.data + l->at, (uint32_t)l->len}};
  }
  if (!rc)
    rc = bus_log_batch_pack(&sb, &d);
  edge_msg m = {subject, "log.batch", sb.data, sb.size};
  if (!rc)
    edge_send(p->a, &m);
  else
    edge_logf("error", "-", "dropping %u lines: %s", p->nlines,
              bus_last_error());
  msgpack_sbuffer_destroy(&sb);
  free(lines);
  msgpack_sbuffer_clear(&p->text);
  p->nlines = 0;
  p->packed = 0;
}

/* Room for one more pending line; 0 when there is none. */
static int
line_room(edge_proc *p) {
  return !bus_grow(&p->lines, p->nlines, &p->lcap, sizeof *p->lines, 64);
}

static int
count_bytes(void *data, const char *buf, size_t len) {
  (void)buf;
  *(size_t *)data += len;
  return 0;
}

/* The size of l as a packed LogLine: what a batch's size is counted in. */
static size_t
packed_size(const edge_line *l, const char *text) {
  size_t n = 0;
  msgpack_packer pk;
  msgpack_packer_init(&pk, &n, count_bytes);
  bus_log_line ll = {l->ts, bus_str_of(l->stream), {text, (uint32_t)l->len}};
  bus_log_line_write(&pk, &ll);
  return n;
}

/* One line (any length): cut into LogLine-sized pieces. */
void
edge_proc_log(edge_proc *p, const char *stream, const char *text, size_t len) {
  int64_t now = bus_wall_ns();
  do {
    size_t n = edge_utf8_cut(text, len, EDGE_LINE_MAX);
    if (!line_room(p) && (edge_proc_flush(p), !line_room(p)))
      return; /* no memory for even one: the line is lost */
    edge_line *l = &p->lines[p->nlines++];
    *l = (edge_line){now, stream, p->text.size, n};
    msgpack_sbuffer_write(&p->text, text, n);
    edge_utf8_fix(p->text.data + l->at, n);
    p->packed += packed_size(l, p->text.data + l->at);
    if (p->nlines >= (uint32_t)p->a->cfg.log_lines || p->packed >= BATCH_BYTES)
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

void
edge_stream_drain(edge_stream *s) {
  static char chunk[65536]; /* loop thread only */
  uv_os_fd_t fd;
  if (!s->open || uv_fileno((uv_handle_t *)&s->pipe, &fd))
    return;
  for (int i = 0; i < 64; i++) { /* 4 MiB at most: a stuck writer waits */
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    take_bytes(s, chunk, (size_t)n);
  }
  if (s->len) /* the process ended: a line without its newline is whole */
    edge_proc_log(s->p, s->name, s->line, s->len);
  s->len = 0;
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

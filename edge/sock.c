/*
 * sock.c - LARK_SOCKET: a Unix socket per pod where a script in the pod
 * reports, one JSON object per line (edge/README.md):
 *
 *   {"kind": "metric", "values": {"step": 100, "reward": 0.5}}
 *       -> run.reported {kind, values} on lark.in.<node>.sched.run.<pod>
 *   {"type": "log", "text": "...", "stream": "stdout"}
 *       -> a line of the pod's log
 *
 * Each line gets "ok\n" once it is queued in the store (so it survives a
 * cut-off), or "error: <why>\n", in the order the lines came. A client
 * may write many lines before reading the answers: the reports among the
 * lines of one read are queued in one store transaction (one sync), and
 * only then are that read's lines answered, together. The pod's identity
 * is the socket it came through, never the payload. Anything malformed is
 * answered and dropped; a line over 64 KiB closes the connection.
 *
 * A line with "op" is a request to the RL engine's side of the node
 * (engine_sock.c, above: sock.c hands it up through the hook the agent
 * sets, edge_agent.sock_op, and calls nothing there), answered by one
 * JSON line in the same order as the others. A request that waits
 * (wait, wait_weights, publish_weights) holds the connection's later
 * lines until it is answered; then they are taken as if they had just
 * come. A client that pipelines far past a waiting request is not read
 * from until it is answered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "sender.h"
#include "sock.h"
#include "sockline.h"

/* The answer to a request when no engine side is set (never with the
 * agent, which always sets one). */
#define NO_ENGINE "{\"ok\":false,\"error\":\"no engine here\"}"

enum { SOCK_LINE_MAX = 65536, SOCK_READ_MAX = 65536, SOCK_HOLD_MAX = 1 << 20 };

typedef struct reply_req {
  uv_write_t w;
  char text[]; /* the answers */
} reply_req;

static void
on_written(uv_write_t *w, int status) {
  (void)status;
  free(w->data);
}

/* Send r's first len bytes of answers; r is freed once written. */
static void
reply_send(edge_client *c, reply_req *r, size_t len) {
  if (c->closing || !len) {
    free(r);
    return;
  }
  r->w.data = r;
  uv_buf_t b = uv_buf_init(r->text, (unsigned)len);
  if (uv_write(&r->w, (uv_stream_t *)&c->pipe, &b, 1, on_written))
    free(r);
}

static void
client_closed(uv_handle_t *h) {
  edge_client *c = h->data;
  edge_proc *p = c->p;
  for (edge_client **pp = &p->clients; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  free(c->buf);
  free(c->held);
  free(c); /* h was inside c */
  edge_proc_unref(p);
}

static void
client_close(edge_client *c) {
  if (c->closing)
    return;
  c->closing = 1;
  if (c->p->a->sock_cancel)
    c->p->a->sock_cancel(c);
  uv_close((uv_handle_t *)&c->pipe, client_closed);
}

void
edge_sock_reply(edge_client *c, const char *text, size_t len) {
  reply_req *r = malloc(sizeof *r + len + 1);
  if (!r)
    return;
  memcpy(r->text, text, len);
  r->text[len] = '\n';
  reply_send(c, r, len + 1);
}

static void
log_line(void *ud, const char *stream, const char *text, size_t len) {
  edge_proc_log(ud, stream, text, len);
}

/* Queue b's reports in one transaction; NULL, or why they were not. */
static const char *
batch_store(edge_proc *p, edge_sock_batch *b) {
  if (!b->nreports)
    return NULL;
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.in.%s.sched.run.%s", p->a->cfg.node,
           p->pod);
  edge_msg *m = calloc(b->nreports, sizeof *m);
  int rc = m ? 0 : -1;
  for (size_t i = 0; m && i < b->nreports; i++)
    m[i] = (edge_msg){subject, "run.reported", b->reports[i].data,
                      b->reports[i].size};
  if (m)
    rc = edge_send_n(p->a, m, b->nreports);
  free(m);
  return rc ? "cannot queue the report" : NULL;
}

/* Store b's reports, answer each of its lines in order, and empty b. */
static void
batch_answer(edge_client *c, edge_sock_batch *b) {
  const char *stored = batch_store(c->p, b);
  size_t len = 0;
  for (size_t i = 0; i < b->nlines; i++) {
    const char *why = b->lines[i].report ? stored : b->lines[i].why;
    len += why ? strlen(why) + 8 : 3;
  }
  reply_req *r = malloc(sizeof *r + len + 1);
  char *at = r ? r->text : NULL;
  for (size_t i = 0; r && i < b->nlines; i++) {
    const char *why = b->lines[i].report ? stored : b->lines[i].why;
    at += why ? sprintf(at, "error: %s\n", why) : sprintf(at, "ok\n");
  }
  if (r)
    reply_send(c, r, len);
  edge_sock_batch_clear(b);
}

/* Add byte ch to c's line; -1 when the line is too long or memory ran
 * out (the connection is to be closed). */
static int
line_add(edge_client *c, char ch) {
  if (c->len == SOCK_LINE_MAX)
    return -1;
  if (c->len == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 256;
    char *g = realloc(c->buf, cap);
    if (!g)
      return -1;
    c->buf = g;
    c->cap = cap;
  }
  c->buf[c->len++] = ch;
  return 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf);

/* An engine request among c's lines: the lines before it answered
 * first, then it (now, or later when it waits). */
static void
take_op(edge_client *c, edge_sock_batch *batch, size_t len) {
  batch->nlines--; /* it is not the batch's to answer */
  batch_answer(c, batch);
  if (c->p->a->sock_op)
    c->p->a->sock_op(c, c->buf, len);
  else
    edge_sock_reply(c, NO_ENGINE, strlen(NO_ENGINE));
}

/* Keep the n bytes of b that came while a request waits; reading pauses
 * when too many are held. */
static void
hold(edge_client *c, const char *b, size_t n) {
  if (!n)
    return;
  if (c->nheld + n > c->held_cap) {
    size_t cap = c->held_cap ? c->held_cap : 4096;
    while (cap < c->nheld + n)
      cap *= 2;
    char *g = realloc(c->held, cap);
    if (!g) {
      client_close(c);
      return;
    }
    c->held = g, c->held_cap = cap;
  }
  memcpy(c->held + c->nheld, b, n);
  c->nheld += n;
  if (c->nheld >= SOCK_HOLD_MAX && !c->paused) {
    c->paused = 1;
    uv_read_stop((uv_stream_t *)&c->pipe);
  }
}

/* c's bytes, line by line, until an engine request waits (the rest is
 * held for then). */
static void
take(edge_client *c, const char *b, size_t n) {
  edge_sock_batch batch = {0};
  int close_it = 0;
  size_t i = 0;
  if (c->closing)
    return;
  for (; i < n && !close_it && !c->op; i++) {
    if (b[i] != '\n') {
      if (line_add(c, b[i])) {
        close_it = 1;
        if (c->len == SOCK_LINE_MAX && edge_sock_batch_grow(&batch) == 0)
          batch.lines[batch.nlines++] =
              (edge_sock_line){"line longer than 64 KiB", 0, 0};
      }
      continue;
    }
    size_t l = c->len && c->buf[c->len - 1] == '\r' ? c->len - 1 : c->len;
    c->len = 0;
    if (!l)
      continue;
    if (edge_sock_batch_grow(&batch)) {
      close_it = 1;
      break;
    }
    edge_sock_line_parse(&batch, c->buf, l, log_line, c->p);
    if (batch.lines[batch.nlines - 1].op)
      take_op(c, &batch, l);
  }
  batch_answer(c, &batch);
  free(batch.lines);
  free(batch.reports);
  if (close_it)
    client_close(c);
  else if (i < n)
    hold(c, b + i, n - i);
}

void
edge_sock_resume(edge_client *c) {
  while (!c->op && c->nheld && !c->closing) {
    char *b = c->held;
    size_t n = c->nheld;
    c->held = NULL, c->nheld = c->held_cap = 0;
    take(c, b, n);
    free(b);
  }
  if (c->paused && !c->op && !c->closing) {
    c->paused = 0;
    if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read))
      client_close(c);
  }
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h, (void)hint;
  static char chunk[SOCK_READ_MAX];
  *buf = uv_buf_init(chunk, sizeof chunk);
}

static void
on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
  edge_client *c = h->data;
  if (n > 0 && c->op)
    hold(c, buf->base, (size_t)n);
  else if (n > 0)
    take(c, buf->base, (size_t)n);
  else if (n < 0)
    client_close(c);
}

static void
on_conn(uv_stream_t *srv, int status) {
  edge_proc *p = srv->data;
  if (status < 0 || p->ended)
    return;
  edge_client *c = calloc(1, sizeof *c);
  if (!c)
    return;
  c->p = p;
  uv_pipe_init(p->a->loop, &c->pipe, 0);
  c->pipe.data = c;
  p->handles++;
  c->next = p->clients;
  p->clients = c;
  if (uv_accept(srv, (uv_stream_t *)&c->pipe) ||
      uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read))
    client_close(c);
}

int
edge_sock_path(const edge_agent *a, const char *pod, uint32_t attempt,
               char *out, size_t cap) {
  /* sun_path holds 108 bytes: a short name under the data directory, else
   * under /tmp, both derived from the node, pod and attempt. The attempt:
   * a retry starts once the failed attempt's process ended, while that
   * one's handles still close (its output's drain); that teardown removes
   * its own socket file, which must not be the retry's. */
  char id[33];
  char key[EDGE_POD_SZ + EDGE_NAME_SZ + 20];
  snprintf(key, sizeof key, "%s/%s/%u", a->cfg.node, pod, (unsigned)attempt);
  bus_event_derive_id(key, 0, id);
  id[16] = 0;
  int n = snprintf(out, cap, "%s/sock/%s.sock", a->cfg.data, id);
  if (n > 0 && (size_t)n < cap && n < 100)
    return 0;
  n = snprintf(out, cap, "/tmp/lark-edge-%s.sock", id);
  return n > 0 && (size_t)n < cap ? 0 : BUS_EINVAL;
}

int
edge_sock_listen(edge_proc *p) {
  int rc = edge_sock_path(p->a, p->pod, p->attempt, p->sock_path,
                          sizeof p->sock_path);
  if (rc)
    return bus_error(rc, "no socket path for %s", p->pod);
  unlink(p->sock_path);
  uv_pipe_init(p->a->loop, &p->srv, 0);
  p->srv.data = p;
  p->has_srv = 1;
  p->handles++;
  if ((rc = uv_pipe_bind(&p->srv, p->sock_path)) ||
      (rc = uv_listen((uv_stream_t *)&p->srv, 16, on_conn))) {
    edge_sock_close(p);
    return bus_error(BUS_EINVAL, "socket %s: %s", p->sock_path,
                     uv_strerror(rc));
  }
  return 0;
}

void
edge_sock_close(edge_proc *p) {
  for (edge_client *c = p->clients; c; c = c->next)
    client_close(c);
  if (p->has_srv) {
    p->has_srv = 0;
    uv_close((uv_handle_t *)&p->srv, edge_proc_handle_closed);
    unlink(p->sock_path);
  }
}

/*
 * splice.c - two TCP streams joined both ways on a libuv loop (see
 * splice.h).
 *
 * Side 0 is the captured connection, side 1 the one made to the target.
 * Direction i reads side i and writes side 1-i. A read buffer becomes
 * the write request that carries it, so bytes are copied once and freed
 * when written. Reading side i stops while side 1-i has more than
 * HIGH_WATER bytes queued and starts again under LOW_WATER: memory per
 * splice stays bounded whatever the two peers do. Both handles are
 * closed together, and the splice is freed by the second close
 * callback, never before.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus.h"
#include "splice.h"

#define CHUNK 65536
#define HIGH_WATER (512 * 1024)
#define LOW_WATER (128 * 1024)

typedef struct relay_splice {
  relay_splices *set;
  struct relay_splice *next;
  uv_tcp_t side[2];
  uv_connect_t conn;
  uv_shutdown_t sh[2];
  int eof[2];     /* side i sent EOF */
  int shut[2];    /* side i's writing half is shut */
  int reading[2]; /* side i is being read */
  uint64_t bytes[2];
  int closing, closed;
  char why[128];
  relay_splice_done_fn done;
  void *ud;
} relay_splice;

typedef struct wreq {
  uv_write_t w;
  relay_splice *s;
  int dir;
  char data[];
} wreq;

static void start_reading(relay_splice *s, int i);

static void
on_close(uv_handle_t *h) {
  relay_splice *s = h->data;
  if (++s->closed < 2)
    return;
  for (relay_splice **pp = &s->set->head; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  s->set->n--;
  if (s->done)
    s->done(s->ud, s->bytes[0], s->bytes[1], s->why);
  free(s);
}

/* End the splice; with a reason, both sides are reset rather than
 * closed, so neither peer takes a cut stream for a whole one. */
static void
finish(relay_splice *s, const char *why) {
  if (s->closing)
    return;
  s->closing = 1;
  snprintf(s->why, sizeof s->why, "%s", why ? why : "");
  for (int i = 0; i < 2; i++) {
    uv_handle_t *h = (uv_handle_t *)&s->side[i];
    if (why && why[0] && uv_tcp_close_reset(&s->side[i], on_close) == 0)
      continue;
    if (!uv_is_closing(h))
      uv_close(h, on_close);
  }
}

static void
check_done(relay_splice *s) {
  if (s->eof[0] && s->eof[1] && s->shut[0] && s->shut[1])
    finish(s, NULL);
}

static void
on_shutdown(uv_shutdown_t *req, int status) {
  relay_splice *s = req->data;
  if (status < 0 && status != UV_ECANCELED) {
    finish(s, uv_strerror(status));
    return;
  }
  s->shut[req == &s->sh[0] ? 0 : 1] = 1;
  check_done(s);
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h;
  (void)hint;
  wreq *r = malloc(sizeof *r + CHUNK);
  *buf = uv_buf_init(r ? r->data : NULL, r ? CHUNK : 0);
}

static void
on_write(uv_write_t *w, int status) {
  wreq *r = (wreq *)w;
  relay_splice *s = r->s;
  int i = r->dir;
  free(r);
  if (status < 0) {
    finish(s, uv_strerror(status));
    return;
  }
  if (!s->closing && !s->reading[i] && !s->eof[i] &&
      uv_stream_get_write_queue_size((uv_stream_t *)&s->side[1 - i]) <
          LOW_WATER)
    start_reading(s, i);
}

static void
on_eof(relay_splice *s, int i) {
  s->eof[i] = 1;
  s->reading[i] = 0;
  uv_read_stop((uv_stream_t *)&s->side[i]);
  s->sh[1 - i].data = s;
  int rc =
      uv_shutdown(&s->sh[1 - i], (uv_stream_t *)&s->side[1 - i], on_shutdown);
  if (rc)
    finish(s, uv_strerror(rc));
}

static void
on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  relay_splice *s = st->data;
  int i = st == (uv_stream_t *)&s->side[0] ? 0 : 1;
  wreq *r = buf->base ? (wreq *)(buf->base - offsetof(wreq, data)) : NULL;
  if (n <= 0 || s->closing) {
    free(r);
    if (n == UV_EOF && !s->closing)
      on_eof(s, i);
    else if (n < 0 && !s->closing)
      finish(s, n == UV_ENOBUFS ? "out of memory" : uv_strerror((int)n));
    return;
  }
  uv_stream_t *dst = (uv_stream_t *)&s->side[1 - i];
  uv_buf_t out = uv_buf_init(buf->base, (unsigned)n);
  r->s = s;
  r->dir = i;
  s->bytes[i] += (uint64_t)n;
  int rc = uv_write(&r->w, dst, &out, 1, on_write);
  if (rc) {
    free(r);
    finish(s, uv_strerror(rc));
  } else if (uv_stream_get_write_queue_size(dst) > HIGH_WATER) {
    uv_read_stop(st);
    s->reading[i] = 0;
  }
}

static void
start_reading(relay_splice *s, int i) {
  int rc = uv_read_start((uv_stream_t *)&s->side[i], on_alloc, on_read);
  if (rc)
    finish(s, uv_strerror(rc));
  else
    s->reading[i] = 1;
}

static void
on_connect(uv_connect_t *c, int status) {
  relay_splice *s = c->data;
  if (s->closing)
    return;
  if (status < 0) {
    finish(s, uv_strerror(status));
    return;
  }
  start_reading(s, 0);
  if (!s->closing)
    start_reading(s, 1);
}

static int
target_addr(const char *ip, int port, struct sockaddr_storage *sa) {
  memset(sa, 0, sizeof *sa);
  if (strchr(ip, ':'))
    return uv_ip6_addr(ip, port, (struct sockaddr_in6 *)sa);
  return uv_ip4_addr(ip, port, (struct sockaddr_in *)sa);
}

int
relay_splice_start(uv_loop_t *loop, relay_splices *set, int fd, const char *ip,
                   int port, relay_splice_done_fn done, void *ud) {
  struct sockaddr_storage sa;
  relay_splice *s = calloc(1, sizeof *s);
  int rc = s ? target_addr(ip, port, &sa) : -ENOMEM;
  if (rc) {
    close(fd);
    free(s);
    return bus_error(rc, "splice to %s:%d: %s", ip, port, uv_strerror(rc));
  }
  /* without a socket family, uv_tcp_init makes no socket and cannot fail */
  uv_tcp_init(loop, &s->side[0]);
  uv_tcp_init(loop, &s->side[1]);
  s->set = set;
  s->next = set->head;
  set->head = s;
  set->n++;
  s->done = done;
  s->ud = ud;
  s->side[0].data = s->side[1].data = s->conn.data = s;
  if ((rc = uv_tcp_open(&s->side[0], fd)) != 0) {
    close(fd);
    finish(s, uv_strerror(rc));
  } else if ((rc = uv_tcp_connect(&s->conn, &s->side[1],
                                  (const struct sockaddr *)&sa, on_connect))) {
    finish(s, uv_strerror(rc));
  }
  return 0;
}

void
relay_splice_abort_all(relay_splices *set) {
  for (relay_splice *s = set->head; s; s = s->next)
    finish(s, "relay stopping");
}

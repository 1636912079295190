/*
 * robot_sock.c - the robot controller sockets <data>/run/ros-ctrl.sock
 * and ros2-ctrl.sock (robot.h), one per kind the node has, where the pods
 * holding a robot drive it. One JSON object per line each way:
 *
 *   {"op":"list"}                    -> {"ok":true,"robots":[row,...]}
 *   {"op":"status","robot":R}        -> {"ok":true,"robot":row}
 *   {"op":"modes","robot":R}         -> {"ok":true,"modes":[..],"default":M}
 *   {"op":"start","robot":R,"mode":M?} | stop | reset | switch (mode: M)
 *       -> {"ok":true,"robot":row} or {"error":"..."}
 *
 * row: {"name","kind","state","mode","modes","holder","restarts","pid"}.
 *
 * The caller is a pod of this node (SO_PEERCRED, peer.c) or is refused.
 * Only the pod holding R (its pod.desired's boundDevices name robot/R)
 * may drive it: anyone else is refused at once. A holder's op goes out as
 * robot.request on lark.in.<node>.dev.request.<R> with a fresh id;
 * lark-devices answers with robot.desired carrying that id, and the pod
 * is answered once the node has applied it (the robot settled), or told
 * so after 10 s. Nothing drives a robot but its desired state: the
 * socket only asks, through the log. A client's lines are taken one at a
 * time; the next waits for the answer to the one before.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "peer.h"
#include "robot.h"
#include "robot_req.h"
#include "sender.h"

enum { LINE_MAX_BYTES = 65536, ANSWER_MS = 10000 };

typedef struct rsock {
  edge_robots *all;
  edge_dev_kind kind;
  uv_pipe_t srv;
  char path[256];
  int open;
} rsock;

typedef struct rclient {
  uv_pipe_t pipe;
  uv_timer_t timer;
  rsock *sock;
  struct rclient *next;
  char pod[EDGE_POD_SZ]; /* "" : not a pod of this node */
  char *buf;
  size_t len, cap;
  char req[EDGE_REQ_SZ]; /* the request awaiting its answer, or "" */
  int handles, closing;
} rclient;

struct edge_robot_socks {
  rsock s[2];
  rclient *clients;
};

static void pump(rclient *c);

/* ------------------------------------------------------------ replies */

static void
on_written(uv_write_t *w, int status) {
  (void)status;
  free(w);
}

/* Send o (taken) as one line. */
static void
reply(rclient *c, json_t *o) {
  char *s = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  size_t n = s ? strlen(s) : 0;
  uv_write_t *w = s ? malloc(sizeof *w + n + 1) : NULL;
  if (w && !c->closing) {
    char *text = (char *)(w + 1);
    memcpy(text, s, n);
    text[n] = '\n';
    uv_buf_t b = uv_buf_init(text, (unsigned)n + 1);
    if (uv_write(w, (uv_stream_t *)&c->pipe, &b, 1, on_written))
      free(w);
  } else
    free(w);
  free(s);
}

static void reply_error(rclient *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
reply_error(rclient *c, const char *fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  reply(c, json_pack("{s:s}", "error", why));
}

static json_t *
row(const edge_robot *r) {
  const edge_device *d = r->dev;
  json_t *modes = json_array();
  for (int i = 0; i < d->nmodes; i++)
    json_array_append_new(modes, json_string(d->modes[i].name));
  const char *mode = r->run.mode[0]    ? r->run.mode
                     : r->want_mode[0] ? r->want_mode
                                       : d->modes[0].name;
  return json_pack("{s:s,s:s,s:s,s:s,s:o,s:s?,s:I,s:I}", "name", d->name,
                   "kind", edge_dev_kind_name(d->kind), "state",
                   edge_robot_state(r), "mode", mode, "modes", modes, "holder",
                   r->holder[0] ? r->holder : NULL, "restarts",
                   (json_int_t)r->run.restarts, "pid",
                   (json_int_t)(r->live ? r->run.pid : 0));
}

/* --------------------------------------------------------- requests */

/* Whether pod's desired state binds robot/<robot>. */
static int
holds(edge_agent *a, const char *pod, const char *robot) {
  char want[EDGE_DEV_NAME_SZ + 8];
  snprintf(want, sizeof want, "robot/%s", robot);
  return edge_pod_holds(a, pod, want);
}

/* robot.request {robot, op, mode?, pod, request} onto the ingress. */
static int
ask(rclient *c, const edge_robot *r, const char *op, const char *mode) {
  edge_agent *a = c->sock->all->a;
  char subject[BUS_SUBJECT_MAX], id[33];
  bus_event_new_id(id);
  bus_ev_robot_request d = {.robot = bus_str_of(r->dev->name),
                            .op = bus_str_of(op),
                            .has_mode = mode && *mode,
                            .mode = bus_str_of(mode ? mode : ""),
                            .pod = bus_str_of(c->pod),
                            .request = bus_str_of(id)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = bus_subj_robot_request(subject, sizeof subject, a->cfg.node,
                                  r->dev->name);
  if (!rc)
    rc = bus_robot_request_pack(&sb, &d);
  edge_msg m = {subject, "robot.request", sb.data, sb.size};
  if (!rc)
    rc = edge_send(a, &m);
  msgpack_sbuffer_destroy(&sb);
  if (!rc) {
    snprintf(c->req, sizeof c->req, "%s", id);
    edge_logf("info", subject, "pod %s asks to %s robot %s (request %s)",
              c->pod, op, r->dev->name, id);
  }
  return rc;
}

static void
on_timeout(uv_timer_t *t) {
  rclient *c = t->data;
  if (!c->req[0])
    return;
  c->req[0] = 0;
  reply(c, json_pack("{s:s}", "error",
                     "no answer within 10 s: the request is in the log, "
                     "but lark-devices has not decided it"));
  pump(c);
}

/* start, stop, reset, switch: a holder's request. */
static void
drive(rclient *c, edge_robot *r, const edge_robot_req *q) {
  if (!holds(c->sock->all->a, c->pod, r->dev->name)) {
    reply_error(c, "pod %s does not hold robot %s", c->pod, r->dev->name);
    return;
  }
  if (q->mode[0] && !edge_device_mode(r->dev, q->mode)) {
    reply_error(c, "robot %s has no mode %s", r->dev->name, q->mode);
    return;
  }
  const char *op =
      q->op == EDGE_ROBOT_SWITCH ? "mode" : edge_robot_op_name(q->op);
  if (ask(c, r, op, q->mode)) {
    reply_error(c, "cannot queue the request: %s", bus_last_error());
    return;
  }
  uv_timer_start(&c->timer, on_timeout, ANSWER_MS, 0);
}

static void
list(rclient *c) {
  json_t *robots = json_array();
  edge_robots *all = c->sock->all;
  for (int i = 0; i < all->n; i++)
    if (all->v[i].dev->kind == c->sock->kind)
      json_array_append_new(robots, row(&all->v[i]));
  reply(c, json_pack("{s:b,s:o}", "ok", 1, "robots", robots));
}

static void
modes(rclient *c, const edge_robot *r) {
  json_t *v = json_array();
  for (int i = 0; i < r->dev->nmodes; i++)
    json_array_append_new(v, json_string(r->dev->modes[i].name));
  reply(c, json_pack("{s:b,s:o,s:s}", "ok", 1, "modes", v, "default",
                     r->dev->modes[0].name));
}

/* One request line. */
static void
serve(rclient *c, const char *line, size_t len) {
  edge_robot_req q;
  char why[256];
  if (edge_robot_req_parse(line, len, &q, why, sizeof why)) {
    reply_error(c, "%s", why);
    return;
  }
  if (!c->pod[0]) {
    reply_error(c, "refused: the caller is not a pod of this node");
    return;
  }
  edge_robot *r = edge_robot_find(c->sock->all, q.robot);
  if (r && r->dev->kind != c->sock->kind)
    r = NULL; /* the other kind's socket */
  if (q.op == EDGE_ROBOT_LIST)
    list(c);
  else if (!r)
    reply_error(c, "no robot %s on this socket", q.robot);
  else if (q.op == EDGE_ROBOT_STATUS)
    reply(c, json_pack("{s:b,s:o}", "ok", 1, "robot", row(r)));
  else if (q.op == EDGE_ROBOT_MODES)
    modes(c, r);
  else
    drive(c, r, &q);
}

/* ---------------------------------------------------------- clients */

/* Serve the lines buffered, one at a time, while none awaits an answer. */
static void
pump(rclient *c) {
  while (!c->req[0] && !c->closing) {
    char *nl = memchr(c->buf, '\n', c->len);
    if (!nl)
      return;
    size_t n = (size_t)(nl - c->buf);
    if (n)
      serve(c, c->buf, n);
    memmove(c->buf, nl + 1, c->len - n - 1);
    c->len -= n + 1;
  }
}

static void
client_closed(uv_handle_t *h) {
  rclient *c = h->data;
  if (--c->handles > 0)
    return;
  struct edge_robot_socks *s = c->sock->all->socks;
  for (rclient **pp = &s->clients; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  free(c->buf);
  free(c);
}

static void
client_close(rclient *c) {
  if (c->closing)
    return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->timer, client_closed);
  uv_close((uv_handle_t *)&c->pipe, client_closed);
}

static void
on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h, (void)hint;
  static char chunk[LINE_MAX_BYTES];
  *buf = uv_buf_init(chunk, sizeof chunk);
}

static void
on_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf) {
  rclient *c = h->data;
  if (n < 0) {
    client_close(c);
    return;
  }
  if (c->len + (size_t)n > LINE_MAX_BYTES ||
      bus_grow(&c->buf, c->len + (size_t)n, &c->cap, 1, 1024)) {
    reply_error(c, "line longer than 64 KiB");
    client_close(c);
    return;
  }
  memcpy(c->buf + c->len, buf->base, (size_t)n);
  c->len += (size_t)n;
  pump(c);
}

static void
on_conn(uv_stream_t *srv, int status) {
  rsock *s = srv->data;
  if (status < 0)
    return;
  rclient *c = calloc(1, sizeof *c);
  if (!c)
    return;
  c->sock = s;
  uv_pipe_init(srv->loop, &c->pipe, 0);
  uv_timer_init(srv->loop, &c->timer);
  c->pipe.data = c->timer.data = c;
  c->handles = 2;
  c->next = s->all->socks->clients;
  s->all->socks->clients = c;
  uv_os_fd_t fd;
  if (uv_accept(srv, (uv_stream_t *)&c->pipe) ||
      uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read)) {
    client_close(c);
    return;
  }
  if (uv_fileno((uv_handle_t *)&c->pipe, &fd) ||
      edge_peer_pod(s->all->a, fd, c->pod, sizeof c->pod))
    c->pod[0] = 0;
}

/* A robot took a desired state with request req and settled: answer the
 * pod that asked. */
static void
on_settled(edge_robots *all, edge_robot *r, const char *req) {
  for (rclient *c = all->socks->clients; c; c = c->next)
    if (c->req[0] && !strcmp(c->req, req)) {
      c->req[0] = 0;
      uv_timer_stop(&c->timer);
      reply(c, json_pack("{s:b,s:o}", "ok", 1, "robot", row(r)));
      pump(c);
    }
}

/* ---------------------------------------------------------- sockets */

static int
sock_open(rsock *s) {
  struct sockaddr_un sa;
  if (edge_dev_socket_path(s->all->a->cfg.data, s->kind, s->path,
                           sizeof sa.sun_path))
    return bus_error(BUS_EINVAL,
                     "the robot socket's path under %s is too "
                     "long for a Unix socket",
                     s->all->a->cfg.data);
  unlink(s->path);
  uv_pipe_init(s->all->a->loop, &s->srv, 0);
  s->srv.data = s;
  s->open = 1;
  int rc = uv_pipe_bind(&s->srv, s->path);
  if (!rc)
    rc = uv_listen((uv_stream_t *)&s->srv, 64, on_conn);
  if (rc)
    return bus_error(BUS_EINVAL, "socket %s: %s", s->path, uv_strerror(rc));
  edge_logf("info", s->path, "robot controller socket");
  return 0;
}

int
edge_robot_socks_open(edge_robots *all) {
  char dir[4200];
  struct edge_robot_socks *socks = calloc(1, sizeof *socks);
  if (!socks)
    return -ENOMEM;
  all->socks = socks;
  all->settled = on_settled;
  snprintf(dir, sizeof dir, "%s/run", all->a->cfg.data);
  if (mkdir(dir, 0755) < 0 && errno != EEXIST)
    return bus_error(-errno, "cannot make %s", dir);
  for (int k = 0; k < 2; k++) {
    rsock *s = &socks->s[k];
    s->all = all;
    s->kind = k ? EDGE_DEV_ROS2 : EDGE_DEV_ROS;
    int have = 0;
    for (int i = 0; i < all->n && !have; i++)
      have = all->v[i].dev->kind == s->kind;
    int rc = have ? sock_open(s) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

static void
noop_closed(uv_handle_t *h) {
  (void)h;
}

void
edge_robot_socks_close(edge_robots *all) {
  struct edge_robot_socks *socks = all ? all->socks : NULL;
  if (!socks)
    return;
  for (rclient *c = socks->clients; c; c = c->next)
    client_close(c);
  for (int k = 0; k < 2; k++)
    if (socks->s[k].open) {
      socks->s[k].open = 0;
      uv_close((uv_handle_t *)&socks->s[k].srv, noop_closed);
      unlink(socks->s[k].path);
    }
}

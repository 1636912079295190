/*
 * node.c - lark-relay node's loop: captures follow the route table, and
 * each captured connection is routed once (see node.h).
 *
 * Invariants:
 * - Only the loop thread touches captures, splices and the session list;
 *   the follower thread only changes the route table (which locks
 *   itself) and wakes the loop. Decisions read the table at accept time,
 *   so a connection is routed by the rows of that moment.
 * - A capture is keyed by its pod; a row that changes its address,
 *   prefix or Domain is set up anew, a row that goes away is torn down.
 *   A capture that could not be set up (the pod's namespace not there
 *   yet) is retried every RETRY_MS, logging only a changed reason.
 * - A captured socket is always either spliced, handed to a session, or
 *   reset: the pod never waits on a connection nobody holds.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "capture.h"
#include "node.h"
#include "podnet.h"
#include "relay-int.h"
#include "routes.h"
#include "splice.h"
#include "sshc.h"
#include "wlisten.h"

#define TICK_MS 100
#define RETRY_MS 1000
#define CERT_SCAN_MS 10000

typedef struct node node;

typedef struct cap {
  struct cap *next;
  node *n;
  char pod[256], ns[PODNET_NS_MAX], domain[64];
  char vip[RELAY_IP_MAX], cidr[64];
  int fd; /* listener; -1 while not set up */
  int seen;
  uv_poll_t poll;
  char err[256]; /* last set-up failure, logged once */
} cap;

typedef struct dom {
  struct dom *next;
  char name[64];
  relay_sshc *s;
} dom;

struct node {
  relay_node_opts o;
  volatile sig_atomic_t *stop;
  uv_loop_t loop;
  uv_async_t changed;
  uv_timer_t tick;
  uint64_t last_retry, last_scan;
  int failed; /* stopped because the broker connection closed */
  int stopping;
  bus_conn *bus;
  relay_routes *rt;
  relay_follow *fol;
  cap *caps;
  dom *doms;
  relay_splices splices;
  relay_wlisten *weights; /* NULL without --weights-listen */
};

static void nlog(node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
nlog(node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  relay__vlog(n->o.log, n->o.log_ud, fmt, ap);
  va_end(ap);
}

void
relay_node_opts_init(relay_node_opts *o) {
  memset(o, 0, sizeof *o);
  o->capture_port = RELAY_CAPTURE_PORT;
}

/* ------------------------------------------------------------- sessions */

static dom *
find_dom(node *n, const char *name) {
  for (dom *d = n->doms; d; d = d->next)
    if (!strcmp(d->name, name))
      return d;
  return NULL;
}

static void
start_dom(node *n, const char *name) {
  char key[1024], cert[1024];
  struct stat st;
  snprintf(key, sizeof key, "%s/%s.key", n->o.certs, name);
  snprintf(cert, sizeof cert, "%s/%s-cert.pub", n->o.certs, name);
  if (stat(key, &st) || find_dom(n, name))
    return;
  relay_sshc_opts so = {.domain = name,
                        .key_path = key,
                        .cert_path = cert,
                        .hub_host = n->o.hub_host,
                        .hub_port = n->o.hub_port,
                        .hub_key_path = n->o.hub_key,
                        .cluster = n->o.cluster,
                        .routes = n->rt,
                        .log = n->o.log,
                        .log_ud = n->o.log_ud};
  dom *d = calloc(1, sizeof *d);
  if (!d || relay_sshc_start(&so, &d->s)) {
    nlog(n, "node: domain %s: no hub session: %s", name, bus_last_error());
    free(d);
    return;
  }
  snprintf(d->name, sizeof d->name, "%s", name);
  d->next = n->doms;
  n->doms = d;
  nlog(n, "node: domain %s: certificate %s", name, cert);
}

/* A session for every <domain>-cert.pub with its <domain>.key. */
static void
scan_certs(node *n) {
  DIR *dir = opendir(n->o.certs);
  struct dirent *e;
  if (!dir) {
    nlog(n, "node: certificates %s: %s", n->o.certs, strerror(errno));
    return;
  }
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name), sl = strlen("-cert.pub");
    char name[64];
    if (len <= sl || len - sl >= sizeof name ||
        strcmp(e->d_name + len - sl, "-cert.pub"))
      continue;
    memcpy(name, e->d_name, len - sl);
    name[len - sl] = 0;
    if (bus_name_valid(name, BUS_NAME_MAX))
      start_dom(n, name);
  }
  closedir(dir);
}

/* A weights request (wlisten.h) onto the first hub session that is up. */
static int
submit_weights(void *ud, int fd, const relay_wreq *r, char *why, size_t cap) {
  node *n = ud;
  for (dom *d = n->doms; d; d = d->next)
    if (relay_sshc_ready(d->s) && !relay_sshc_submit_weights(d->s, fd, r))
      return 0;
  snprintf(why, cap, "no session with the hub");
  return -1;
}

/* -------------------------------------------------------------- routing */

typedef struct flow {
  node *n;
  char what[600];
} flow;

static void
on_splice_done(void *ud, uint64_t ab, uint64_t ba, const char *why) {
  flow *f = ud;
  nlog(f->n, "node: %s: closed (%llu bytes out, %llu in)%s%s", f->what,
       (unsigned long long)ab, (unsigned long long)ba, why[0] ? ": " : "", why);
  free(f);
}

static void
route_local(node *n, int fd, const relay_route *r, int port, const char *what) {
  flow *f = calloc(1, sizeof *f);
  if (!f) {
    relay__reset_fd(fd);
    return;
  }
  f->n = n;
  snprintf(f->what, sizeof f->what, "%s local %s:%d", what, r->real_ip, port);
  nlog(n, "node: %s: local to pod %s at %s:%d", what, r->pod, r->real_ip, port);
  if (relay_splice_start(&n->loop, &n->splices, fd, r->real_ip, port,
                         on_splice_done, f)) {
    nlog(n, "node: %s: %s", what, bus_last_error());
    free(f);
  }
}

static void
route_hub(node *n, int fd, const cap *c, const char *ip, int port,
          const char *what) {
  dom *d = find_dom(n, c->domain);
  if (!d) {
    nlog(n, "node: refused %s: no certificate for domain %s", what, c->domain);
    relay__reset_fd(fd);
  } else if (relay_sshc_submit(d->s, fd, ip, port)) {
    nlog(n, "node: refused %s: %s", what, bus_last_error());
    relay__reset_fd(fd);
  } else {
    nlog(n, "node: %s: via hub", what);
  }
}

/* Route one captured connection by its original destination. */
static void
route(node *n, cap *c, int fd) {
  char ip[RELAY_IP_MAX], what[400];
  int port;
  relay_route r;
  if (relay_capture_target(fd, ip, &port)) {
    nlog(n, "node: refused a connection in pod %s: %s", c->pod,
         bus_last_error());
    relay__reset_fd(fd);
    return;
  }
  snprintf(what, sizeof what, "pod %s -> %s:%d", c->pod, ip, port);
  if (relay_routes_find(n->rt, c->domain, ip, &r)) {
    nlog(n, "node: refused %s: no route in domain %s", what, c->domain);
    relay__reset_fd(fd);
  } else if (r.via_hub) {
    route_hub(n, fd, c, ip, port, what);
  } else if (!r.real_ip[0]) {
    nlog(n, "node: refused %s: pod %s has no address yet", what, r.pod);
    relay__reset_fd(fd);
  } else {
    route_local(n, fd, &r, port, what);
  }
}

static void
on_accept(uv_poll_t *p, int status, int events) {
  cap *c = p->data;
  (void)events;
  if (status < 0)
    return;
  for (int i = 0; i < 64; i++) {
    int fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      break;
    route(c->n, c, fd);
  }
}

/* ------------------------------------------------------------- captures */

static void
on_cap_closed(uv_handle_t *h) {
  cap *c = h->data;
  close(c->fd);
  free(c);
}

/* Unlink c and free it: the listener goes with the poll handle. */
static void
cap_free(node *n, cap *c) {
  for (cap **pp = &n->caps; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  if (c->fd < 0) {
    free(c);
    return;
  }
  uv_poll_stop(&c->poll);
  uv_close((uv_handle_t *)&c->poll, on_cap_closed);
}

static void
cap_down(node *n, cap *c, const char *why) {
  if (c->fd >= 0) {
    if (relay_capture_down(c->ns, c->cidr))
      nlog(n, "node: pod %s: %s", c->pod, bus_last_error());
    nlog(n, "node: pod %s: capture removed (%s)", c->pod, why);
  }
  cap_free(n, c);
}

static void
cap_try_up(node *n, cap *c) {
  int fd = -1;
  if (relay_capture_up(c->ns, c->vip, c->cidr, n->o.capture_port, &fd)) {
    const char *e = bus_last_error();
    if (strcmp(e, c->err))
      nlog(n, "node: pod %s: capture not set up yet: %s", c->pod, e);
    snprintf(c->err, sizeof c->err, "%s", e);
    return;
  }
  c->fd = fd;
  c->poll.data = c;
  if (uv_poll_init(&n->loop, &c->poll, fd) ||
      uv_poll_start(&c->poll, UV_READABLE, on_accept)) {
    nlog(n, "node: pod %s: cannot poll its capture", c->pod);
    c->fd = -1;
    close(fd);
    return;
  }
  nlog(n, "node: pod %s: capturing %s from %s in %s (port %d)", c->pod, c->cidr,
       c->vip, c->ns, n->o.capture_port);
}

static cap *
find_cap(node *n, const char *pod) {
  for (cap *c = n->caps; c; c = c->next)
    if (!strcmp(c->pod, pod))
      return c;
  return NULL;
}

static int
same_cap(const cap *c, const relay_route *r) {
  return !strcmp(c->domain, r->domain) && !strcmp(c->vip, r->ip) &&
         !strcmp(c->cidr, r->cidr);
}

/* Make sure row r (a pod of this node) is captured. */
static void
want(node *n, const relay_route *r) {
  cap *c = find_cap(n, r->pod);
  if (c && !same_cap(c, r)) {
    cap_down(n, c, "its route changed");
    c = NULL;
  }
  if (!c) {
    if (!(c = calloc(1, sizeof *c)))
      return;
    c->n = n;
    c->fd = -1;
    snprintf(c->pod, sizeof c->pod, "%s", r->pod);
    snprintf(c->domain, sizeof c->domain, "%s", r->domain);
    snprintf(c->vip, sizeof c->vip, "%s", r->ip);
    snprintf(c->cidr, sizeof c->cidr, "%s", r->cidr);
    podnet_ns_name(r->pod, c->ns);
    c->next = n->caps;
    n->caps = c;
  }
  c->seen = 1;
  if (c->fd < 0)
    cap_try_up(n, c);
}

typedef struct rows {
  relay_route *v;
  size_t n, cap;
  const char *node;
} rows;

static int
collect(const relay_route *r, void *ud) {
  rows *w = ud;
  if (r->via_hub || strcmp(r->node, w->node) || !r->real_ip[0] || !r->cidr[0])
    return 0;
  int rc = bus_grow(&w->v, w->n, &w->cap, sizeof *w->v, 16);
  if (rc)
    return rc;
  w->v[w->n++] = *r;
  return 0;
}

static void
reconcile(node *n) {
  rows w = {.node = n->o.node};
  if (relay_routes_each(n->rt, collect, &w)) {
    free(w.v);
    return; /* out of memory: keep what is set up, try again later */
  }
  for (cap *c = n->caps; c; c = c->next)
    c->seen = 0;
  for (size_t i = 0; i < w.n; i++)
    want(n, &w.v[i]);
  for (cap *c = n->caps, *next; c; c = next) {
    next = c->next;
    if (!c->seen)
      cap_down(n, c, "its route is gone");
  }
  free(w.v);
}

/* ----------------------------------------------------------------- loop */

static void
on_changed(uv_async_t *a) {
  node *n = a->data;
  if (!n->stopping)
    reconcile(n);
}

/* Stop: follower first (it wakes the loop), then captures, flows and
 * sessions; the loop ends when the last handle is closed. */
static void
begin_stop(node *n) {
  n->stopping = 1;
  relay_follow_stop(n->fol);
  n->fol = NULL;
  while (n->caps)
    cap_down(n, n->caps, "relay stopping");
  relay_splice_abort_all(&n->splices);
  relay_wlisten_stop(n->weights);
  n->weights = NULL;
  for (dom *d = n->doms, *next; d; d = next) {
    next = d->next;
    relay_sshc_stop(d->s);
    free(d);
  }
  n->doms = NULL;
  uv_timer_stop(&n->tick);
  uv_close((uv_handle_t *)&n->tick, NULL);
  uv_close((uv_handle_t *)&n->changed, NULL);
}

static void
on_tick(uv_timer_t *t) {
  node *n = t->data;
  uint64_t now = uv_now(&n->loop);
  if (*n->stop) {
    begin_stop(n);
    return;
  }
  if (bus_conn_closed(n->bus)) { /* e.g. credentials refused twice */
    nlog(n, "node: the broker connection closed for good; stopping");
    n->failed = 1;
    begin_stop(n);
    return;
  }
  if (now - n->last_scan >= CERT_SCAN_MS) {
    n->last_scan = now;
    scan_certs(n);
  }
  if (now - n->last_retry >= RETRY_MS) {
    n->last_retry = now;
    reconcile(n);
  }
}

static int
check_opts(const relay_node_opts *o) {
  if (!o->cluster || !o->node || !o->hub_host || !o->hub_key || !o->certs ||
      !o->url)
    return bus_error(BUS_EINVAL, "node needs --cluster, --node, --hub, "
                                 "--hub-key, --certs and --url");
  if (!bus_name_valid(o->cluster, BUS_NAME_MAX) ||
      !bus_name_valid(o->node, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "cluster and node must be names");
  if (o->hub_port <= 0 || o->hub_port > 65535 || o->capture_port <= 0 ||
      o->capture_port > 65535 || o->weights_port < 0 || o->weights_port > 65535)
    return bus_error(BUS_EINVAL, "ports must be from 1 to 65535");
  return 0;
}

static int
connect_bus(node *n) {
  bus_conn_opts bo;
  char name[128];
  bus_conn_opts_init(&bo);
  bo.url = n->o.url;
  bo.creds = n->o.creds;
  snprintf(name, sizeof name, "lark-relay-%s", n->o.node);
  bo.name = name;
  bo.retry_on_failed_connect = 1;
  bo.inbox_own = 1; /* replies only to its own inbox (broker-config) */
  int rc = bus_conn_open(&n->bus, &bo);
  return rc ? rc : relay_routes_new(&n->rt);
}

static void
wake_loop(void *ud) {
  node *n = ud;
  uv_async_send(&n->changed);
}

/* Undo start_loop half-way: close what it opened and run the loop dry. */
static void
close_loop(node *n) {
  relay_wlisten_stop(n->weights);
  n->weights = NULL;
  uv_close((uv_handle_t *)&n->tick, NULL);
  uv_close((uv_handle_t *)&n->changed, NULL);
  uv_run(&n->loop, UV_RUN_DEFAULT);
  uv_loop_close(&n->loop);
}

static int
start_loop(node *n) {
  char filter[BUS_SUBJECT_MAX];
  int rc = uv_loop_init(&n->loop);
  if (rc)
    return bus_error(rc, "loop: %s", uv_strerror(rc));
  n->changed.data = n->tick.data = n;
  uv_async_init(&n->loop, &n->changed, on_changed);
  uv_timer_init(&n->loop, &n->tick);
  snprintf(filter, sizeof filter, "lark.route.*.%s.>", n->o.cluster);
  if ((n->o.weights_host &&
       (rc = relay_wlisten_start(&n->loop, n->o.weights_host, n->o.weights_port,
                                 submit_weights, n, n->o.log, n->o.log_ud,
                                 &n->weights))) ||
      (rc = relay_follow_start(n->bus, filter, n->rt, wake_loop, n, &n->fol))) {
    close_loop(n);
    return rc;
  }
  nlog(n, "node: %s of cluster %s following %s; hub %s:%d", n->o.node,
       n->o.cluster, filter, n->o.hub_host, n->o.hub_port);
  scan_certs(n);
  n->last_scan = n->last_retry = uv_now(&n->loop);
  uv_timer_start(&n->tick, on_tick, TICK_MS, TICK_MS);
  return 0;
}

int
relay_node_run(const relay_node_opts *o, volatile sig_atomic_t *stop) {
  int rc = check_opts(o);
  if (rc)
    return rc;
  node *n = calloc(1, sizeof *n);
  if (!n)
    return -ENOMEM;
  n->o = *o;
  n->stop = stop;
  if (!(rc = connect_bus(n)) && !(rc = start_loop(n))) {
    uv_run(&n->loop, UV_RUN_DEFAULT);
    uv_loop_close(&n->loop);
    nlog(n, "node: stopped");
    if (n->failed)
      rc = bus_error(BUS_ECONN, "the broker connection closed");
  }
  relay_follow_stop(n->fol);
  relay_routes_free(n->rt);
  bus_conn_close(n->bus);
  free(n);
  return rc;
}

/*
 * weights_get.c - fetching a version from the nodes that hold it.
 *
 * A wait that nothing held here satisfies looks at the Job's
 * engine.weights projection: the newest version listed that the wait
 * takes is fetched, once per (job, version) however many pods wait. The
 * fetch runs on a thread of its own (the loop never blocks): its sources
 * in order, this node's cluster first (another cluster only through
 * --weights-relay), each over TLS 1.3 checked to be that node's
 * certificate; the bytes go to <dir>/.part.<sha>.<n>, hashed as they are
 * written, and only a file of the announced size and sha256 is renamed
 * into the cache. A mismatch is refused and logged, the part deleted and
 * the next source tried; when every source failed the fetch is tried
 * again after a backoff (1 s, doubling to 30 s). Back on the loop (an
 * async) a fetched version is indexed with its weights.report {cached}
 * and the waits are answered.
 *
 * A pod's wait (edge_weights_wait_for) and a new projection
 * (edge_weights_on_projection) enter here: the wait is parked by
 * weights.c, below, then the fetch it needs is started.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "weights_int.h"

enum { SRC_MAX = 16, CHUNK = 1 << 20, BACKOFF_MAX_MS = 30000 };

typedef struct wt_src {
  char node[EDGE_NAME_SZ], cluster[EDGE_NAME_SZ], address[WT_ADDR_SZ];
} wt_src;

struct wt_fetch {
  wt_fetch *next;
  edge_weights *ws;
  edge_wver w; /* job, version, sha256, size as the projection says */
  wt_src src[SRC_MAX];
  int nsrc;
  pthread_t th;
  int running;
  atomic_int done, fd, stop;
  int rc;
  char why[512], from[EDGE_NAME_SZ];
  uint64_t ms;
  int failures;
  int64_t retry_at; /* mono ms */
};

static atomic_uint part_seq;

/* A TCP connection to src (through the relay for another cluster). */
static int
dial(wt_fetch *f, const wt_src *src) {
  const edge_config *c = &f->ws->a->cfg;
  int relay = strcmp(src->cluster, c->cluster) && *src->cluster;
  const char *addr = relay ? c->weights_relay : src->address;
  char host[256], port[16], line[700];
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL, *i;
  int fd = -1, rc;
  if (relay && !addr)
    return bus_error(BUS_EINVAL, "cluster %s, and no --weights-relay",
                     src->cluster);
  if ((rc = wt_addr_split(addr, host, sizeof host, port, sizeof port)))
    return rc;
  if ((rc = getaddrinfo(host, port, &hints, &ai)))
    return bus_error(BUS_ECONN, "%s: %s", addr, gai_strerror(rc));
  for (i = ai; i && fd < 0; i = i->ai_next) {
    fd = socket(i->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, i->ai_addr, i->ai_addrlen) < 0)
      close(fd), fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0)
    return bus_error(BUS_ECONN, "connect %s: %s", addr, strerror(errno));
  wt_sock_timeouts(fd);
  snprintf(line, sizeof line, "WEIGHTS %s %s %s %s\n", f->w.job, c->node,
           src->node, src->address);
  if (relay && write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
    close(fd);
    return bus_error(BUS_ECONN, "relay %s: %s", addr, strerror(errno));
  }
  return fd;
}

/* want bytes into buf (TLS hands one record, 16 KiB, per read: a whole
 * chunk makes one write and one hash update); fewer only at an error. */
static ssize_t
fill(SSL *ssl, char *buf, size_t want) {
  size_t got = 0, n;
  while (got < want && SSL_read_ex(ssl, buf + got, want - got, &n) == 1)
    got += n;
  return (ssize_t)got;
}

/* The body into part, hashed as it goes; its sha256 checked. */
static int
receive(wt_fetch *f, SSL *ssl, int out) {
  char *buf = malloc(CHUNK), hex[65];
  uint64_t left = f->w.size;
  wt_sha h;
  int rc = buf ? wt_sha_init(&h) : -ENOMEM;
  while (!rc && left) {
    size_t want = left < CHUNK ? (size_t)left : CHUNK;
    ssize_t n = fill(ssl, buf, want);
    if (n < (ssize_t)want)
      rc = bus_error(BUS_ECONN, "short transfer: %s", wt_tls_error());
    else if (write(out, buf, want) != (ssize_t)want)
      rc = bus_error(-errno, "write: %s", strerror(errno));
    else
      wt_sha_update(&h, buf, want), left -= want;
  }
  free(buf);
  if (rc && buf)
    wt_sha_free(&h);
  if (rc)
    return rc;
  wt_sha_final(&h, hex);
  if (strcmp(hex, f->w.sha256))
    return bus_error(BUS_EINVAL, "sha256 mismatch: got %s", hex);
  return fsync(out) < 0 ? bus_error(-errno, "fsync: %s", strerror(errno)) : 0;
}

/* GET the version on an open session, into the cache. */
static int
get_on(wt_fetch *f, SSL *ssl) {
  char line[600], part[WT_PATH_SZ + 100], path[WT_PATH_SZ], why[300];
  uint64_t size = 0;
  wt_req q = {.version = f->w.version};
  snprintf(q.job, sizeof q.job, "%s", f->w.job);
  snprintf(q.sha256, sizeof q.sha256, "%s", f->w.sha256);
  int rc = wt_req_format(&q, line, sizeof line);
  if (!rc)
    rc = wt_tls_write(ssl, line, strlen(line));
  if (!rc)
    rc = wt_tls_line(ssl, line, sizeof line);
  if (rc)
    return rc;
  if (wt_ans_parse(line, &size, why, sizeof why))
    return bus_error(BUS_EINVAL, "%s", why);
  if (size != f->w.size)
    return bus_error(BUS_EINVAL, "offered %llu bytes, not %llu",
                     (unsigned long long)size, (unsigned long long)f->w.size);
  snprintf(part, sizeof part, "%s/.part.%s.%u", f->ws->dir, f->w.sha256,
           atomic_fetch_add(&part_seq, 1));
  int out = open(part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0)
    return bus_error(-errno, "%s: %s", part, strerror(errno));
  rc = receive(f, ssl, out);
  close(out);
  wt_path(f->ws, f->w.sha256, path, sizeof path);
  if (!rc && (chmod(part, 0444) < 0 || rename(part, path) < 0))
    rc = bus_error(-errno, "into the cache: %s", strerror(errno));
  if (rc)
    unlink(part);
  return rc;
}

static int
fetch_from(wt_fetch *f, const wt_src *src) {
  char node[EDGE_NAME_SZ];
  int fd = dial(f, src), rc = 0;
  if (fd < 0)
    return fd;
  atomic_store(&f->fd, fd);
  SSL *ssl = SSL_new(f->ws->client);
  if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1)
    rc = bus_error(BUS_ECONN, "TLS: %s", wt_tls_error());
  else if (!(rc = wt_tls_peer(ssl, node, sizeof node, NULL, 0)) &&
           strcmp(node, src->node))
    rc = bus_error(BUS_EAUTH, "its certificate is node %s's", node);
  if (!rc)
    rc = get_on(f, ssl);
  if (ssl && !rc)
    SSL_shutdown(ssl);
  SSL_free(ssl);
  atomic_store(&f->fd, -1);
  close(fd);
  return rc;
}

static void *
fetch_main(void *arg) {
  wt_fetch *f = arg;
  int64_t t0 = bus_mono_ms();
  f->rc = BUS_ENOT_FOUND;
  snprintf(f->why, sizeof f->why, "no source");
  for (int i = 0; i < f->nsrc && !atomic_load(&f->stop); i++) {
    if (!(f->rc = fetch_from(f, &f->src[i]))) {
      snprintf(f->from, sizeof f->from, "%s", f->src[i].node);
      break;
    }
    snprintf(f->why, sizeof f->why, "%s", bus_last_error());
    edge_logf("warn", f->w.job, "weights %llu from %s (%s): %s",
              (unsigned long long)f->w.version, f->src[i].node,
              f->src[i].address, f->why);
  }
  f->ms = (uint64_t)(bus_mono_ms() - t0);
  atomic_store(&f->done, 1);
  uv_async_send(&f->ws->fetched);
  return NULL;
}

/* ------------------------------------------------------------- loop */

/* The sources of ref but this node, its cluster first. */
static void
sources(wt_fetch *f, const bus_weights_ref *ref) {
  const edge_config *c = &f->ws->a->cfg;
  f->nsrc = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < ref->sources.n && f->nsrc < SRC_MAX; i++) {
      const bus_weights_source *s = &ref->sources.v[i];
      wt_src *d = &f->src[f->nsrc];
      bus_str_copy(s->node, d->node, sizeof d->node);
      bus_str_copy(s->has_cluster ? s->cluster : bus_str_of(c->cluster),
                   d->cluster, sizeof d->cluster);
      bus_str_copy(s->address, d->address, sizeof d->address);
      if (!strcmp(d->node, c->node) || !*d->address ||
          (!strcmp(d->cluster, c->cluster)) != (pass == 0))
        continue;
      f->nsrc++;
    }
}

static wt_fetch *
fetch_find(edge_weights *ws, const char *job, uint64_t version) {
  for (wt_fetch *f = ws->fetches; f; f = f->next)
    if (!strcmp(f->w.job, job) && f->w.version == version)
      return f;
  return NULL;
}

/* The least min of job's waits; 0 when none waits. */
static uint64_t
wanted(edge_weights *ws, const char *job, int *any) {
  uint64_t m = UINT64_MAX;
  *any = 0;
  for (edge_weights_wait *w = ws->waits; w; w = w->next)
    if (!strcmp(w->job, job) && (*any = 1) && w->min < m)
      m = w->min;
  return m;
}

/* Start (or start again) the fetch of ref, unless it runs or waits out
 * its backoff. */
static void
fetch_start(edge_weights *ws, const char *job, const bus_weights_ref *ref) {
  wt_fetch *f = fetch_find(ws, job, ref->version);
  if (f && (f->running || bus_mono_ms() < f->retry_at))
    return;
  if (!f) {
    if (!(f = calloc(1, sizeof *f)))
      return;
    f->ws = ws, f->next = ws->fetches, ws->fetches = f;
    snprintf(f->w.job, sizeof f->w.job, "%s", job);
    f->w.version = ref->version;
  }
  f->w.size = ref->size;
  bus_str_copy(ref->sha256, f->w.sha256, sizeof f->w.sha256);
  sources(f, ref);
  atomic_store(&f->done, 0);
  atomic_store(&f->fd, -1);
  if (!wt_sha_valid(f->w.sha256) || !f->nsrc ||
      pthread_create(&f->th, NULL, fetch_main, f)) {
    f->retry_at = bus_mono_ms() + 1000;
    return;
  }
  f->running = 1;
  edge_logf("info", job, "fetching weights %llu (%llu bytes) from %s%s",
            (unsigned long long)f->w.version, (unsigned long long)f->w.size,
            f->src[0].node, f->nsrc > 1 ? " and others" : "");
}

void
wt_fetch_kick(edge_weights *ws, const char *job) {
  int any;
  uint64_t m = wanted(ws, job, &any);
  msgpack_zone z;
  const void *out = NULL;
  if (!ws->client || ws->closing || !any || wt_newest(ws, job, m))
    return;
  msgpack_zone_init(&z, 4096);
  if (edge_store_engine_load(ws->a->store, job, "weights", &z, &out) == 0 &&
      out) {
    const bus_ev_engine_weights *e = out;
    const bus_weights_ref *best = NULL;
    for (uint32_t i = 0; i < e->versions.n; i++)
      if (e->versions.v[i].version >= m &&
          (!best || e->versions.v[i].version > best->version))
        best = &e->versions.v[i];
    if (best)
      fetch_start(ws, job, best);
  }
  msgpack_zone_destroy(&z);
}

static void
fetch_unlink(edge_weights *ws, wt_fetch *f) {
  wt_fetch **pp = &ws->fetches;
  while (*pp != f)
    pp = &(*pp)->next;
  *pp = f->next;
  free(f);
}

/* A fetched version into the index, with its weights.report {cached}. */
static void
cached(edge_weights *ws, wt_fetch *f) {
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  f->w.ts = bus_wall_ns();
  int rc = wt_report(ws, &f->w, "cached", NULL, f->from, f->ms, &sb, subject,
                     sizeof subject);
  edge_msg m = {subject, "weights.report", sb.data, sb.size};
  edge_logf("info", f->w.job,
            "weights %llu fetched from %s: %llu bytes in %llu ms",
            (unsigned long long)f->w.version, f->from,
            (unsigned long long)f->w.size, (unsigned long long)f->ms);
  if (rc || (rc = wt_add(ws, &f->w, &m)))
    edge_logf("error", f->w.job, "cannot record weights %llu: %s",
              (unsigned long long)f->w.version, bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

void
wt_fetch_reap(edge_weights *ws) {
  for (wt_fetch *f = ws->fetches, *next; f; f = next) {
    next = f->next;
    if (!f->running || !atomic_load(&f->done))
      continue;
    pthread_join(f->th, NULL);
    f->running = 0;
    if (!f->rc && !ws->closing) {
      wt_fetch w = *f;
      fetch_unlink(ws, f);
      cached(ws, &w); /* may answer waits, which may start fetches */
      next = ws->fetches;
      continue;
    }
    f->failures++;
    int64_t back = 1000LL << (f->failures < 6 ? f->failures - 1 : 5);
    back = back > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : back;
    f->retry_at = bus_mono_ms() + back;
    edge_logf("warn", f->w.job,
              "weights %llu not fetched (%s): again in %lld ms",
              (unsigned long long)f->w.version, f->why, (long long)back);
  }
}

void
wt_fetch_stop(edge_weights *ws) {
  for (wt_fetch *f = ws->fetches; f; f = f->next)
    if (f->running) {
      atomic_store(&f->stop, 1);
      int fd = atomic_load(&f->fd);
      if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    }
  while (ws->fetches) {
    wt_fetch *f = ws->fetches;
    if (f->running)
      pthread_join(f->th, NULL);
    fetch_unlink(ws, f);
  }
}

/* Forget the failed fetches nobody waits for any more. */
void
wt_fetch_prune(edge_weights *ws) {
  int any;
  for (wt_fetch *f = ws->fetches, *next; f; f = next) {
    next = f->next;
    wanted(ws, f->w.job, &any);
    if (!f->running && !any)
      fetch_unlink(ws, f);
  }
}

/* ------------------------------------------------ the entry points */

edge_weights_wait *
edge_weights_wait_for(edge_agent *a, edge_proc *p, uint64_t min,
                      uint64_t timeout_ms, edge_weights_cb cb, void *ud) {
  edge_weights_wait *w = wt_wait(a, p, min, timeout_ms, cb, ud);
  if (w) /* parked: nothing held takes it yet */
    wt_fetch_kick(a->weights, p->job);
  return w;
}

void
edge_weights_on_projection(edge_agent *a, const char *job) {
  edge_weights *ws = a->weights;
  if (ws && !ws->closing)
    wt_fetch_kick(ws, job);
}

/*
 * weights_pub.c - a pod publishes a weights version (weights.h).
 *
 * The path must resolve (realpath) inside the pod's working directory
 * (its process's cwd, or its own directory under <data>/pods) and be a
 * regular file. On a libuv worker the file is hard-linked into the cache
 * under a temporary name (a copy when the cache is on another
 * filesystem), hashed, made read only and renamed to <sha256>; back on
 * the loop the version is indexed and its weights.report {published}
 * queued in one store transaction. A hard link shares the pod's inode:
 * the pod's file becomes read only too, and a pod writes each version to
 * a new file (a file rewritten in place after its publish would change
 * the cache under its checked hash).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "weights_int.h"

typedef struct pub {
  uv_work_t work;
  edge_weights *ws;
  edge_wver w;
  char pod[EDGE_POD_SZ];
  char src[WT_PATH_SZ];
  char why[512];
  int rc;
  edge_weights_cb cb;
  void *ud;
} pub;

static atomic_uint tmp_seq;

/* in into tmp: a hard link when the filesystem allows, else a copy; the
 * content's hash either way. */
static int
stage(int in, const char *src, const char *tmp, pub *q) {
  int rc, out = -1;
  if (link(src, tmp) == 0)
    rc = wt_hash_fd(in, -1, q->w.sha256, &q->w.size);
  else if (errno != EXDEV && errno != EPERM && errno != EMLINK)
    return bus_error(-errno, "cannot link it into the cache: %s",
                     strerror(errno));
  else if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
    return bus_error(-errno, "cannot copy it into the cache: %s",
                     strerror(errno));
  else if (!(rc = wt_hash_fd(in, out, q->w.sha256, &q->w.size)) &&
           fsync(out) < 0)
    rc = bus_error(-errno, "fsync: %s", strerror(errno));
  if (out >= 0)
    close(out);
  if (!rc && chmod(tmp, 0444) < 0)
    rc = bus_error(-errno, "chmod: %s", strerror(errno));
  return rc;
}

static void
pub_work(uv_work_t *req) {
  pub *q = req->data;
  char tmp[WT_PATH_SZ + 64], path[WT_PATH_SZ];
  struct stat st;
  int in = open(q->src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
    q->rc = in < 0 ? -errno : BUS_EINVAL;
    snprintf(q->why, sizeof q->why, "%.400s: %s", q->src,
             in < 0 ? strerror(errno) : "not a regular file");
    if (in >= 0)
      close(in);
    return;
  }
  snprintf(tmp, sizeof tmp, "%s/.pub.%d.%u", q->ws->dir, (int)getpid(),
           atomic_fetch_add(&tmp_seq, 1));
  unlink(tmp);
  q->rc = stage(in, q->src, tmp, q);
  close(in);
  if (!q->rc) {
    wt_path(q->ws, q->w.sha256, path, sizeof path);
    if (rename(tmp, path) < 0)
      q->rc = bus_error(-errno, "rename into the cache: %s", strerror(errno));
  }
  if (q->rc) {
    snprintf(q->why, sizeof q->why, "%s", bus_last_error());
    unlink(tmp);
  }
}

/* Index the version and queue its report (loop). */
static int
pub_store(pub *q) {
  edge_weights *ws = q->ws;
  const edge_wver *have = wt_newest(ws, q->w.job, q->w.version);
  char subject[BUS_SUBJECT_MAX];
  if (have && have->version == q->w.version &&
      !strcmp(have->sha256, q->w.sha256))
    return 0; /* published already: the same answer, no second report */
  if (have) {
    snprintf(q->why, sizeof q->why,
             "version %llu is not newer than version %llu held here",
             (unsigned long long)q->w.version,
             (unsigned long long)have->version);
    return BUS_EINVAL;
  }
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = wt_report(ws, &q->w, "published", q->pod, NULL, 0, &sb, subject,
                     sizeof subject);
  edge_msg m = {subject, "weights.report", sb.data, sb.size};
  if (!rc)
    rc = wt_add(ws, &q->w, &m);
  msgpack_sbuffer_destroy(&sb);
  if (rc)
    snprintf(q->why, sizeof q->why, "cannot record it: %s", bus_last_error());
  else
    edge_logf("info", q->w.job, "weights %llu published by %s: %llu bytes %s",
              (unsigned long long)q->w.version, q->pod,
              (unsigned long long)q->w.size, q->w.sha256);
  return rc;
}

static void
pub_done(uv_work_t *req, int status) {
  pub *q = req->data;
  edge_weights *ws = q->ws;
  char path[WT_PATH_SZ];
  if (!q->rc && status)
    q->rc = status, snprintf(q->why, sizeof q->why, "cancelled");
  if (!q->rc)
    q->rc = pub_store(q);
  ws->pending--;
  if (!ws->closing) {
    wt_path(ws, q->w.sha256, path, sizeof path);
    if (q->rc)
      q->cb(q->ud, q->rc, q->why, q->w.version, NULL, NULL, 0);
    else
      q->cb(q->ud, 0, NULL, q->w.version, path, q->w.sha256, q->w.size);
  } else
    wt_free_if_done(ws);
  free(q);
}

/* The directory a pod's paths are resolved in, and may not leave: its
 * process's working directory (realpath), else its own directory. */
static void
pod_root(edge_proc *p, char *root) {
  char link[64];
  snprintf(link, sizeof link, "/proc/%d/cwd", (int)p->pid);
  if (p->pid <= 0 || !realpath(link, root))
    if (!realpath(p->dir, root))
      snprintf(root, PATH_MAX, "%.4000s", p->dir);
}

static int
inside(const char *root, const char *path) {
  size_t n = strlen(root);
  return !strncmp(path, root, n) && (path[n] == '/' || (n == 1 && *root));
}

static int
resolve(edge_proc *p, const char *path, char *out) {
  char root[PATH_MAX], joined[WT_PATH_SZ + PATH_MAX];
  pod_root(p, root);
  if (!path || !*path)
    return bus_error(BUS_EINVAL, "a path is needed");
  if (*path == '/')
    snprintf(joined, sizeof joined, "%s", path);
  else
    snprintf(joined, sizeof joined, "%s/%s", root, path);
  if (!realpath(joined, out))
    return bus_error(-errno, "%s: %s", path, strerror(errno));
  if (!inside(root, out))
    return bus_error(BUS_EINVAL, "%s is outside the pod's working directory",
                     path);
  return 0;
}

int
edge_weights_publish(edge_agent *a, edge_proc *p, uint64_t version,
                     const char *path, edge_weights_cb cb, void *ud) {
  edge_weights *ws = a->weights;
  char real[PATH_MAX];
  int rc;
  if (!ws || ws->closing)
    return bus_error(BUS_EINVAL, "the node keeps no weights");
  if (version < 1)
    return bus_error(BUS_EINVAL, "a version is a number from 1 up");
  if ((rc = resolve(p, path, real)))
    return rc;
  pub *q = calloc(1, sizeof *q);
  if (!q)
    return bus_error(-ENOMEM, "out of memory");
  q->ws = ws, q->cb = cb, q->ud = ud, q->work.data = q;
  q->w.version = version;
  q->w.ts = bus_wall_ns();
  snprintf(q->w.job, sizeof q->w.job, "%s", p->job);
  snprintf(q->pod, sizeof q->pod, "%s", p->pod);
  snprintf(q->src, sizeof q->src, "%s", real);
  if ((rc = uv_queue_work(a->loop, &q->work, pub_work, pub_done))) {
    free(q);
    return bus_error(BUS_EINVAL, "cannot queue the hash: %s", uv_strerror(rc));
  }
  ws->pending++;
  return 0;
}

/*
 * replay.c - rebuild a view from its stream; verify a live one.
 *
 * The rebuild reads the stream with an ordered, ack-less reader whose
 * upper bound is fixed when it opens, and applies each fetched batch in
 * one transaction of a NOSYNC environment: a crash mid-rebuild leaves a
 * directory to throw away, never a wrong answer, because a finished
 * rebuild syncs once and only then reports its digest.
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "replay.h"

void
lark_replay_opts_init(lark_replay_opts *o) {
  memset(o, 0, sizeof *o);
  o->batch = 8192;
}

/* out_dir must be new or empty: a rebuild never mixes with old data. */
static int
fresh_dir(const char *dir) {
  if (mkdir(dir, 0700) == 0)
    return 0;
  if (errno != EEXIST)
    return -errno;
  DIR *d = opendir(dir);
  if (!d)
    return -errno;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n ? BUS_EEXISTS : 0;
}

static int
copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = -1, rc = 0;
  if (in < 0)
    return -errno;
  out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (out < 0) {
    rc = -errno;
    goto out;
  }
  char buf[1 << 16];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) {
      rc = -EIO;
      goto out;
    }
  if (n < 0)
    rc = -errno;
out:
  close(in);
  if (out >= 0)
    close(out);
  return rc;
}

static int
prepare_dir(const lark_replay_opts *o) {
  int rc = fresh_dir(o->out_dir);
  if (rc || !o->from_snapshot)
    return rc;
  char from[4096], to[4096];
  snprintf(from, sizeof from, "%s/data.mdb", o->from_snapshot);
  snprintf(to, sizeof to, "%s/data.mdb", o->out_dir);
  return copy_file(from, to);
}

static int
open_reader(bus_conn *c, const bus_view_def *def, const lark_replay_opts *o,
            uint64_t from, bus_reader **r) {
  bus_reader_opts ro;
  bus_reader_opts_init(&ro);
  ro.stream = def->stream ? def->stream : "LARK_EVENTS";
  ro.filter = def->filter ? def->filter : "lark.ev.>";
  ro.from_seq = from;
  ro.until_seq = o->until_seq;
  ro.until_ns = o->until_ns;
  ro.batch = o->batch;
  return bus_reader_open(c, &ro, r);
}

/*
 * Reading (fetch and decode) and applying (LMDB) overlap: a reader thread
 * fills batches while this thread applies the previous one. Batches pass
 * through a ring of RING slots; each is owned by one thread at a time.
 */
#define RING 3

typedef struct pipe {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bus_reader *r;
  bus_batch *b[RING];
  int status[RING];    /* reader's return for that batch */
  unsigned head, tail; /* filled: [tail, head) */
  int stop;
} pipe_t;

static void *
read_ahead(void *arg) {
  pipe_t *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->head - p->tail == RING && !p->stop)
      pthread_cond_wait(&p->cv, &p->mu);
    int stop = p->stop;
    unsigned slot = p->head % RING;
    pthread_mutex_unlock(&p->mu);
    if (stop)
      return NULL;
    int rc = bus_reader_next(p->r, p->b[slot], 5000);
    pthread_mutex_lock(&p->mu);
    p->status[slot] = rc;
    p->head++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (rc < 0) /* the end, or an error: the applier sees it */
      return NULL;
  }
}

/* Wait for the next filled slot. */
static unsigned
next_filled(pipe_t *p) {
  pthread_mutex_lock(&p->mu);
  while (p->head == p->tail)
    pthread_cond_wait(&p->cv, &p->mu);
  unsigned slot = p->tail % RING;
  pthread_mutex_unlock(&p->mu);
  return slot;
}

static void
release(pipe_t *p) {
  pthread_mutex_lock(&p->mu);
  p->tail++;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static int
apply_ring(bus_view *v, pipe_t *p, const lark_replay_opts *o,
           lark_replay_result *res) {
  uint64_t end = bus_reader_end_seq(p->r);
  for (;;) {
    unsigned slot = next_filled(p);
    bus_batch *b = p->b[slot];
    int nrc = p->status[slot];
    if (nrc < 0 && nrc != BUS_EEOF)
      return nrc;
    res->events += bus_batch_len(b);
    int rc = bus_view_apply_batch(v, b);
    if (!rc && o->progress && bus_batch_len(b)) {
      uint64_t seq;
      bus_batch_meta(b, bus_batch_len(b) - 1, NULL, &seq, NULL);
      o->progress(seq, end, res->events, o->ud);
    }
    release(p); /* the reader clears it when it refills it */
    if (rc || nrc == BUS_EEOF)
      return rc;
  }
}

static int
feed(bus_view *v, bus_reader *r, const lark_replay_opts *o,
     lark_replay_result *res) {
  pipe_t p = {.r = r};
  int rc = 0;
  for (int i = 0; i < RING && !rc; i++)
    rc = bus_batch_new(&p.b[i]);
  pthread_t th;
  if (!rc) {
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    if (pthread_create(&th, NULL, read_ahead, &p))
      rc = -EAGAIN;
    else {
      rc = apply_ring(v, &p, o, res);
      pthread_mutex_lock(&p.mu);
      p.stop = 1;
      pthread_cond_broadcast(&p.cv);
      pthread_mutex_unlock(&p.mu);
      pthread_join(th, NULL);
    }
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
  }
  for (int i = 0; i < RING; i++)
    bus_batch_free(p.b[i]);
  return rc;
}

int
lark_replay_run(bus_conn *c, const lark_view_entry *ve,
                const lark_replay_opts *o, lark_replay_result *res) {
  memset(res, 0, sizeof *res);
  int64_t t0 = bus_mono_ns();
  bus_view *v = NULL;
  bus_reader *r = NULL;
  bus_view_def def;
  ve->def(&def);
  int rc = prepare_dir(o);
  if (rc)
    return rc;
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = o->out_dir;
  vo.nosync = 1;
  vo.effects = 0;
  if ((rc = bus_view_open(&v, &def, &vo)))
    goto out;
  bus_view_stats st;
  if ((rc = bus_view_stats_get(v, &st)))
    goto out;
  if (!o->until_seq || st.applied_seq < o->until_seq) {
    if ((rc = open_reader(c, &def, o, st.applied_seq + 1, &r)))
      goto out;
    if ((rc = feed(v, r, o, res)))
      goto out;
  }
  if (!(rc = bus_view_sync(v)))
    rc = bus_view_digest(v, res->digest, &res->seq);
out:
  bus_reader_close(r);
  bus_view_close(v);
  res->seconds = (double)(bus_mono_ns() - t0) / 1e9;
  return rc;
}

/* The live view has applied nothing yet: compare with an empty view. */
static int
empty_view(const lark_view_entry *ve, const lark_replay_opts *o,
           lark_replay_result *res) {
  memset(res, 0, sizeof *res);
  bus_view_def def;
  ve->def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = o->out_dir;
  vo.effects = 0;
  bus_view *v;
  int rc = bus_view_open(&v, &def, &vo);
  if (rc)
    return rc;
  rc = bus_view_digest(v, res->digest, &res->seq);
  bus_view_close(v);
  return rc;
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int
lark_replay_verify(bus_conn *c, const lark_view_entry *ve, const char *out_dir,
                   bus_status *live, lark_replay_result *res) {
  int rc = bus_status_query(c, ve->name, 3000, live);
  if (rc)
    return rc;
  char tmp[4096];
  if (!out_dir) {
    const char *base = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/lark-verify-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(tmp))
      return -errno;
  }
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = out_dir ? out_dir : tmp;
  o.until_seq = live->seq;
  rc = live->seq ? lark_replay_run(c, ve, &o, res) : empty_view(ve, &o, res);
  if (!out_dir)
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc)
    return rc;
  char hex[65];
  bus_digest_hex(res->digest, hex);
  return strcmp(hex, live->digest) ? BUS_ECORRUPT : 0;
}

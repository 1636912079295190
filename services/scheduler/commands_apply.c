/*
 * commands_apply.c - job.apply: whether a Job may be written (its
 * resource, its names against every other Job's, the runtimes its tasks
 * need, a spec that changed), and the group commit that checks and
 * appends the commands that come together (see group_apply).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact.h"
#include "commands-int.h"
#include "expand.h"
#include "jobcheck.h"

/* The runtimes one node's resource (msgpack, v[vl]) offers into *mask;
 * -ENOMEM when it could not be read. */
static int
node_runtimes(const void *v, size_t vl, unsigned *mask) {
  msgpack_zone z;
  msgpack_object o;
  bus_node_res res;
  char name[32];
  *mask = 0;
  if (!msgpack_zone_init(&z, 1024))
    return -ENOMEM;
  if (msgpack_unpack(v, vl, NULL, &z, &o) >= 0 &&
      bus_node_registered_unpack(&o, &z, &res) == 0) {
    if (!res.spec.runtimes.n)
      *mask |= SCHED_RT_RAW;
    for (uint32_t i = 0; i < res.spec.runtimes.n; i++)
      *mask |= sched_runtime_bit(
          bus_str_copy(res.spec.runtimes.v[i], name, sizeof name));
  }
  msgpack_zone_destroy(&z);
  return 0;
}

/*
 * What each node's resource offers, kept between groups beside the bytes
 * it was read from (under sched_job_writes, as every check is): a group
 * walks `nodespecs` and unpacks only a resource whose bytes changed, so
 * the answer is the one a fresh read gives. Unpacking every node's
 * resource for every group was most of a group's check with Jobs of one.
 */
typedef struct rt_seen {
  void *bytes; /* key, then value */
  size_t kl, vl;
  unsigned mask;
} rt_seen;

static struct {
  rt_seen *v;
  size_t n, cap, at; /* at: the walk's position */
} rt_cache;

static int
collect_runtimes(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  unsigned *mask = ud;
  size_t i = rt_cache.at++;
  rt_seen *e = i < rt_cache.n ? &rt_cache.v[i] : NULL;
  if (e && e->kl == kl && e->vl == vl && !memcmp(e->bytes, k, kl) &&
      !memcmp((char *)e->bytes + kl, v, vl)) {
    *mask |= e->mask;
    return 0;
  }
  unsigned m;
  int rc = node_runtimes(v, vl, &m);
  if (rc)
    return rc;
  *mask |= m;
  if (!e && (i != rt_cache.n || bus_grow(&rt_cache.v, rt_cache.n, &rt_cache.cap,
                                         sizeof *rt_cache.v, 64)))
    return 0; /* not kept: read again next time */
  e = &rt_cache.v[i];
  void *b = i < rt_cache.n ? realloc(e->bytes, kl + vl) : malloc(kl + vl);
  if (!b)
    return 0;
  memcpy(b, k, kl);
  memcpy((char *)b + kl, v, vl);
  *e = (rt_seen){b, kl, vl, m};
  if (i == rt_cache.n)
    rt_cache.n++;
  return 0;
}

/* The runtimes the nodes of t offer, as collect_runtimes keeps them. */
static unsigned
offered_runtimes(bus_txn *t) {
  unsigned mask = 0;
  rt_cache.at = 0;
  bus_txn_scan(t, "nodespecs", NULL, 0, collect_runtimes, &mask);
  for (size_t i = rt_cache.at; i < rt_cache.n; i++)
    free(rt_cache.v[i].bytes); /* nodes gone since */
  if (rt_cache.at < rt_cache.n)
    rt_cache.n = rt_cache.at;
  return mask;
}

/* The paths where two resources differ (a changed spec is refused). */
static void
diff(const msgpack_object *a, const msgpack_object *b, char *path, size_t plen,
     bus_field_err *errs, int *n) {
  if (*n >= MAX_ERRS)
    return;
  if (a && b && a->type == MSGPACK_OBJECT_MAP &&
      b->type == MSGPACK_OBJECT_MAP) {
    for (int side = 0; side < 2; side++) {
      const msgpack_object *x = side ? b : a, *y = side ? a : b;
      for (uint32_t i = 0; i < x->via.map.size; i++) {
        const msgpack_object_kv *kv = &x->via.map.ptr[i];
        char key[128];
        if (kv->key.type != MSGPACK_OBJECT_STR)
          continue;
        snprintf(key, sizeof key, "%.*s", (int)kv->key.via.str.size,
                 kv->key.via.str.ptr);
        const msgpack_object *other = bus_obj_get(y, key);
        if (side && other)
          continue; /* both sides have it: compared on the first pass */
        size_t at = strlen(path);
        snprintf(path + at, plen - at, "%s%s", at ? "." : "", key);
        diff(side ? other : &kv->val, side ? &kv->val : other, path, plen, errs,
             n);
        path[at] = 0;
      }
    }
    return;
  }
  if (a && b && msgpack_object_equal(*a, *b))
    return;
  snprintf(errs[*n].path, sizeof errs[*n].path, "%s", path);
  snprintf(errs[*n].reason, sizeof errs[*n].reason, "%s",
           !a   ? "added"
           : !b ? "removed"
                : "changed");
  (*n)++;
}

/* Same spec: unchanged. Only spec.stopped differs: stop or resume. Else
 * EXISTS with the differences. */
static int
compare_existing(bus_txn *t, const char *name, const msgpack_object *res,
                 const bus_job_res *job, bus_field_err *errs, int *n,
                 int *stop_to) {
  msgpack_zone z;
  msgpack_object old;
  char path[256] = "";
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = sched_spec_unpack(t, "specs", name, &z, &old);
  *n = 0;
  if (rc != BUS_ECORRUPT && rc)
    goto out;
  if (!rc)
    diff(&old, res, path, sizeof path, errs, n);
  rc = 0;
  *stop_to = -1;
  if (*n == 1 && !strcmp(errs[0].path, "spec.stopped"))
    *stop_to = job->spec.has_stopped && job->spec.stopped;
out:
  msgpack_zone_destroy(&z);
  return rc;
}

/* The runtimes the nodes offer, not read yet (check_new_job). */
#define RT_UNREAD (~0u)

/* What each task needs to run on a node (artifact.h): its artifact's
 * form, and an entrypoint or a runScript. Adds to errs[*n..]. */
static int
check_runnable(const bus_job_res *job, bus_field_err *errs, int *n) {
  int found = 0;
  for (uint32_t i = 0; i < job->spec.tasks.n; i++) {
    char field[64], why[200], name[SCHED_NAME_SZ];
    if (!lark_task_can_run(&job->spec.tasks.v[i], &job->spec, field,
                           sizeof field, why, sizeof why))
      continue;
    found++;
    if (*n >= MAX_ERRS)
      continue;
    bus_str_copy(job->spec.tasks.v[i].name, name, sizeof name);
    snprintf(errs[*n].path, sizeof errs[*n].path, "spec.tasks[%u].%.60s", i,
             field);
    snprintf(errs[*n].reason, sizeof errs[*n].reason, "task %.63s: %.88s", name,
             why);
    (*n)++;
  }
  return found ? BUS_EFIELD : 0;
}

/* A name collision leaves its reason, naming both Jobs, in message; so
 * does a stage naming no task of the Job, with its path. res is the
 * resource as submitted, res_t decoded. */
static int
check_new_job(bus_txn *t, const msgpack_object *res, const bus_job_res *res_t,
              unsigned *offered, bus_field_err *errs, int *n, char *message,
              size_t cap) {
  sched_job job;
  int rc = sched_job_read(res_t, &job, errs, MAX_ERRS, n);
  if (!rc && (rc = lark_job_engine_check(bus_obj_get(res, "spec"), "spec", errs,
                                         MAX_ERRS, n)))
    snprintf(message, cap, "%.96s: %.150s", errs[0].path, errs[0].reason);
  if (!rc) {
    sched_owner o = {.t = t};
    rc = sched_names_check(&job, sched_owner_of, &o, &errs[0]);
    *n = rc ? 1 : 0;
    if (rc)
      snprintf(message, cap, "%s", errs[0].reason);
  }
  if (!rc) {
    if (*offered == RT_UNREAD) /* once for every Job checked in t */
      *offered = offered_runtimes(t);
    rc = sched_job_runtimes_check(&job, *offered ? *offered : SCHED_RT_ALL,
                                  errs, MAX_ERRS, n);
  }
  if (!rc && (rc = check_runnable(res_t, errs, n)))
    snprintf(message, cap, "%s", errs[0].reason);
  sched_job_clear(&job);
  return rc;
}

typedef struct plan {
  bus_type type; /* event to append, BUS_T_UNKNOWN: nothing */
  uint64_t prev;
  const char *what;  /* created, unchanged, stopped, resumed */
  char message[256]; /* a refusal's message, when not the usual one */
} plan;

static int
plan_job_apply(bus_txn *t, const msgpack_object *res, const bus_job_res *job,
               const char *name, unsigned *offered, bus_field_err *errs, int *n,
               plan *pl) {
  job_rec j;
  int rc = sched_cmd_state_in(t, "job", name, &j, &pl->prev);
  int exists = !rc && !j.deleted;
  if (rc == BUS_ENOT_FOUND)
    rc = 0;
  if (!rc && exists) {
    int stop_to;
    rc = compare_existing(t, name, res, job, errs, n, &stop_to);
    if (!rc && *n == 0)
      pl->what = "unchanged";
    else if (!rc && stop_to >= 0) {
      pl->type = stop_to ? BUS_T_JOB_STOPPED : BUS_T_JOB_RESUMED;
      pl->what = stop_to ? "stopped" : "resumed";
      *n = 0;
    } else if (!rc)
      rc = BUS_EEXISTS;
  } else if (!rc) {
    rc = check_new_job(t, res, job, offered, errs, n, pl->message,
                       sizeof pl->message);
    pl->type = BUS_T_JOB_SUBMITTED;
    pl->what = "created";
  }
  return rc;
}

/*
 * job.apply commands are taken in groups (a group commit): the first one
 * to come while no group is being written leads; it makes sure once that
 * every Job submitted before is either in the view or one the groups
 * appended (catch_up: a Job submitted just before, by this scheduler or
 * another, is then checked against; apply refuses what slips past),
 * checks every command of the group in one read of the view, and appends
 * their events at once, each settled by its own answer
 * (bus_cmd_append_many). Commands that came meanwhile wait for the next
 * group. Each command's worker replies to its own
 * command. Writes of Jobs are one at a time: a group, or a stop, resume or
 * delete (sched_job_writes).
 */
#define GROUP_MAX 256

typedef struct apply_req {
  struct apply_req *next;
  bus_conn *c;
  const bus_cmd *cmd;
  bus_view *v;
  const msgpack_object *res;
  bus_job_res job;
  char name[SCHED_NAME_SZ];
  bus_field_err errs[MAX_ERRS];
  int n;
  plan pl;
  int rc;  /* the check's: replied as a refusal */
  int arc; /* the append's */
  uint64_t seq;
  int done;
  pthread_cond_t cv; /* its worker waits on it (under group.mu) */
} apply_req;

/* The queued commands (under mu) and whether a group is being led. Each
 * waiting worker is woken alone: when its command is done, or when it is
 * first in the queue and no group is led (then it leads); not all 64 at
 * every group's end. */
static struct {
  pthread_mutex_t mu;
  apply_req *head;
  int leading;
} group = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

pthread_mutex_t sched_job_writes = PTHREAD_MUTEX_INITIALIZER;

/*
 * What the groups appended that the view may not have applied yet (under
 * sched_job_writes): a group checks against the view and these, so it need not
 * wait for the view to apply the group before it. It waits only when the
 * last event of lark.ev.job.> is not one of these (someone else wrote a
 * Job: the view must have it), or when one of these has names a command
 * of the group shares.
 */
typedef struct pending {
  bus_view *v;
  char name[SCHED_NAME_SZ];
  uint64_t seq;
} pending;

static pending *pend;
static size_t npend, pend_cap;

/* Names a and b share (one is the other, or starts it and a '-'): their
 * Tasks and Pods may collide. */
static int
names_overlap(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), k = la < lb ? la : lb;
  return !strncmp(a, b, k) && (la == lb || (la < lb ? b : a)[k] == '-');
}

/* Check each command of g (n of them) in one read; a command whose Job
 * names overlap an earlier one's is put back in *later (checked in the
 * next group, once the view has that one). */
static void
check_group(bus_view *v, apply_req **g, size_t *n, apply_req **later) {
  bus_txn *t;
  unsigned offered = RT_UNREAD;
  size_t kept = 0;
  int rc = bus_view_read(v, &t);
  for (size_t i = 0; i < *n; i++) {
    apply_req *r = g[i];
    int overlap = 0;
    for (size_t k = 0; k < kept && !overlap; k++)
      overlap = names_overlap(r->name, g[k]->name);
    if (overlap) {
      r->next = *later;
      *later = r;
      continue;
    }
    g[kept++] = r;
    r->rc = rc ? rc
               : plan_job_apply(t, r->res, &r->job, r->name, &offered, r->errs,
                                &r->n, &r->pl);
  }
  if (!rc)
    bus_txn_end(t);
  *n = kept;
}

/* Append the events of the group's accepted commands. */
static void
append_group(bus_conn *c, apply_req **g, size_t n) {
  bus_cmd_item items[GROUP_MAX];
  char subjects[GROUP_MAX][BUS_SUBJECT_MAX];
  bus_packbuf b[GROUP_MAX];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    apply_req *r = g[i];
    if (r->rc || !r->pl.type)
      continue;
    int sub = r->pl.type == BUS_T_JOB_SUBMITTED;
    bus_packbuf_init(&b[k]);
    if (sub)
      msgpack_pack_object(&b[k].pk, *r->res);
    r->arc = bus_subj_job_submitted(subjects[k], BUS_SUBJECT_MAX, r->name);
    items[k] = (bus_cmd_item){.cmd = r->cmd,
                              .subject = subjects[k],
                              .type = bus_type_name(r->pl.type),
                              .prev = r->pl.prev,
                              .data = sub ? b[k].sb.data : NULL,
                              .len = sub ? b[k].sb.size : 0};
    k++;
  }
  int rc = bus_cmd_append_many(c, items, k);
  for (size_t i = 0, at = 0; i < n; i++) {
    apply_req *r = g[i];
    if (r->rc || !r->pl.type)
      continue;
    r->arc = r->arc ? r->arc : rc ? rc : items[at].rc;
    r->seq = items[at].seq;
    bus_packbuf_destroy(&b[at++]);
  }
}

/* Forget what v has applied; the highest sequence of v's pending Jobs
 * whose names overlap one of g's (0: none) into *overlap. */
static void
pending_prune(bus_view *v, apply_req **g, size_t n, uint64_t *overlap) {
  bus_view_stats st;
  size_t keep = 0;
  *overlap = 0;
  if (bus_view_stats_get(v, &st))
    st.applied_seq = 0;
  for (size_t i = 0; i < npend; i++) {
    if (pend[i].v == v && pend[i].seq <= st.applied_seq)
      continue;
    pend[keep++] = pend[i];
    for (size_t k = 0; pend[i].v == v && k < n; k++)
      if (names_overlap(pend[i].name, g[k]->name) && pend[i].seq > *overlap)
        *overlap = pend[i].seq;
  }
  npend = keep;
}

/* Is seq one of v's pending Jobs? */
static int
pending_has(bus_view *v, uint64_t seq) {
  for (size_t i = 0; i < npend; i++)
    if (pend[i].v == v && pend[i].seq == seq)
      return 1;
  return 0;
}

/* Wait until v has what the group must be checked against. */
static void
catch_up(bus_conn *c, bus_view *v, apply_req **g, size_t n) {
  uint64_t last = 0, overlap;
  pending_prune(v, g, n, &overlap);
  int rc = bus_last_event_seq(c, "LARK_EVENTS", "lark.ev.job.>", &last);
  if (rc == BUS_ENOT_FOUND)
    last = 0;
  else if (rc) /* cannot tell: wait for everything, as before */
    bus_view_catch_up(c, v, NULL, 5000);
  if (!rc && last && !pending_has(v, last))
    bus_view_wait_applied(v, last, 5000); /* past it: check anyway */
  if (overlap)
    bus_view_wait_applied(v, overlap, 5000);
}

/* Remember the Jobs the group appended. */
static void
pending_add(bus_view *v, apply_req **g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (g[i]->rc || g[i]->arc || !g[i]->pl.type || !g[i]->seq)
      continue;
    if (bus_grow(&pend, npend, &pend_cap, sizeof *pend, 64))
      return; /* then the next group waits for the view */
    pend[npend] = (pending){.v = v, .seq = g[i]->seq};
    sched_copy(pend[npend].name, sizeof pend[npend].name, g[i]->name,
               strlen(g[i]->name));
    npend++;
  }
}

/* Lead one group: the queued commands of the leader's view. */
static void
lead(apply_req *me) {
  apply_req *g[GROUP_MAX], *later = NULL, **pp = &group.head;
  size_t n = 0;
  while (*pp && n < GROUP_MAX) {
    if ((*pp)->v != me->v) {
      pp = &(*pp)->next;
      continue;
    }
    g[n++] = *pp;
    *pp = (*pp)->next;
  }
  pthread_mutex_unlock(&group.mu);
  pthread_mutex_lock(&sched_job_writes);
  catch_up(me->c, me->v, g, n);
  check_group(me->v, g, &n, &later);
  append_group(me->c, g, n);
  pending_add(me->v, g, n);
  pthread_mutex_unlock(&sched_job_writes);
  pthread_mutex_lock(&group.mu);
  for (size_t i = 0; i < n; i++) {
    g[i]->done = 1;
    if (g[i] != me)
      pthread_cond_signal(&g[i]->cv);
  }
  while (later) { /* back at the head, in their order */
    apply_req *r = later;
    later = r->next;
    r->next = group.head;
    group.head = r;
  }
  group.leading = 0;
  if (group.head && group.head != me) /* the next group's leader */
    pthread_cond_signal(&group.head->cv);
}

/* Queue r and wait until a group (led by r's worker or another) did it. */
static void
group_apply(apply_req *r) {
  pthread_mutex_lock(&group.mu);
  apply_req **tail = &group.head;
  while (*tail)
    tail = &(*tail)->next;
  *tail = r;
  while (!r->done) {
    if (!group.leading) {
      group.leading = 1;
      lead(r);
    } else {
      pthread_cond_wait(&r->cv, &group.mu);
    }
  }
  pthread_mutex_unlock(&group.mu);
}

int
sched_job_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  apply_req *r = calloc(1, sizeof *r);
  msgpack_zone z;
  if (!r || !msgpack_zone_init(&z, 4096)) {
    free(r);
    return -ENOMEM;
  }
  *r = (apply_req){.c = c, .cmd = cmd, .v = v};
  pthread_cond_init(&r->cv, NULL);
  r->res = bus_obj_get(&cmd->body, "resource");
  int rc =
      sched_cmd_resource(c, cmd, "Job", BUS_T_JOB_SUBMITTED,
                         "the body needs a resource", &z, &r->job, r->name);
  if (!rc) {
    group_apply(r);
    rc = r->rc;
  }
  if (!rc)
    rc = sched_cmd_reply(c, cmd, r->arc, r->seq, r->pl.what);
  else if (r->res && r->done)
    bus_cmd_reply_error(c, cmd, rc,
                        r->pl.message[0] ? r->pl.message
                        : rc == BUS_EEXISTS
                            ? "a Job's spec cannot change (only "
                              "spec.stopped); delete it first"
                            : "invalid Job",
                        r->errs, r->n < MAX_ERRS ? r->n : MAX_ERRS);
  msgpack_zone_destroy(&z);
  pthread_cond_destroy(&r->cv);
  free(r);
  return rc;
}

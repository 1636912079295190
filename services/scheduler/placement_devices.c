/*
 * placement_devices.c - a pod's devices on a node: which of the node's
 * entries each key of its request takes, whether they are free, which
 * named devices a class request takes, and their booking.
 *
 * A node's device table (model.h) holds its bare counts, the class
 * SCHED_DEVICE_CLASS and its named devices (SCHED_DEV_NAMED, capacity 1,
 * dev_used 1 while a pod holds it). The class's capacity is its bare
 * count plus the named devices, and its dev_used counts every unit taken:
 * a named device asked for by name takes itself and one unit of the class;
 * a class request of k takes k units, the free named devices first (in
 * name order) and then anonymous ones, except that the devices its own
 * Job asks for by name come last (its other pods need them). So at all
 * times
 *
 *   anonymous units used = class used - named devices held <= bare count
 *
 * and a request fits when each device it names is free and its class units
 * fit in the free named devices it does not name plus the free anonymous
 * units. A robot with a subnet (SCHED_DEV_SUBNET) makes its holder run
 * raw+netns: on a node that does not offer it, the robot is given to no
 * pod (a request naming it does not fit; a class request passes it by).
 * A node without named devices keeps the class a bare count, as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "placement-int.h"
#include "placement.h"

/* ------------------------------------------------------------- entries */

static int
is_named(const sched_node *n, int s) {
  return s >= 0 && (n->capacity.devices[s].flags & SCHED_DEV_NAMED);
}

/* 1 when a pod on n may hold named device s (its subnet needs netns). */
static int
usable(const sched_node *n, int s) {
  return !(n->capacity.devices[s].flags & SCHED_DEV_SUBNET) ||
         (n->runtimes & SCHED_RT_RAW_NETNS);
}

/* 1 when the request's device d, at slot s, is the class of a node that
 * has named devices (else the class is a bare count). */
static int
is_class(const sched_node *n, const sched_template *t, int d, int s) {
  return s >= 0 && n->nnamed &&
         !strcmp(t->req.devices[d].name, SCHED_DEVICE_CLASS);
}

/* The node's named devices: held, and free to a pod there. */
static void
named_counts(const sched_node *n, uint32_t *held, uint32_t *free_usable) {
  *held = *free_usable = 0;
  for (int s = 0; s < n->capacity.ndevices; s++)
    if (is_named(n, s)) {
      *held += n->dev_used[s] != 0;
      *free_usable += !n->dev_used[s] && usable(n, s);
    }
}

/* Anonymous class units free on n (cs: the class's slot). */
static uint64_t
anon_free(const sched_node *n, int cs, uint32_t held) {
  if (cs < 0)
    return 0;
  uint64_t bare = n->capacity.devices[cs].count > n->nnamed
                      ? n->capacity.devices[cs].count - n->nnamed
                      : 0;
  uint64_t used = n->dev_used[cs] > held ? n->dev_used[cs] - held : 0;
  return bare > used ? bare - used : 0;
}

int
sched_pl_node_device(const sched_node *n, const char *name) {
  for (int j = 0; j < n->capacity.ndevices; j++)
    if (!strcmp(n->capacity.devices[j].name, name))
      return j;
  return -1;
}

int
sched_pl_resolve_slots(const sched_template *t, const sched_node *n,
                       int16_t *slots) {
  int ok = 1;
  for (int d = 0; d < t->req.ndevices; d++) {
    slots[d] = (int16_t)sched_pl_node_device(n, t->req.devices[d].name);
    if (slots[d] < 0 && t->req.devices[d].count)
      ok = 0;
  }
  return ok;
}

unsigned
sched_pl_runtime_need(const sched_template *t, const sched_node *n) {
  if (n->nnamed)
    for (int d = 0; d < t->req.ndevices; d++) {
      int s = t->req.devices[d].count
                  ? sched_pl_node_device(n, t->req.devices[d].name)
                  : -1;
      if (is_named(n, s) && (n->capacity.devices[s].flags & SCHED_DEV_SUBNET))
        return SCHED_RT_RAW_NETNS;
    }
  return sched_runtime_bit(t->runtime);
}

/* ------------------------------------------------------------------ fit */

/* What a request asks of n: named devices by name (each free and usable,
 * else *ok = 0) and class units; bare counts are checked here too. */
typedef struct need {
  uint32_t named;
  uint64_t class_k;
  int ok;
} need;

static need
need_of(const sched_node *n, const sched_template *t, const int16_t *slots,
        uint64_t times) {
  need w = {0, 0, 1};
  for (int d = 0; d < t->req.ndevices; d++) {
    uint64_t want = (uint64_t)t->req.devices[d].count * times;
    int s = slots[d];
    if (!want)
      continue;
    if (s < 0)
      w.ok = 0;
    else if (is_named(n, s)) {
      w.ok &= want == 1 && !n->dev_used[s] && usable(n, s);
      w.named++;
    } else if (is_class(n, t, d, s))
      w.class_k += want;
    else if ((uint64_t)n->dev_used[s] + want > n->capacity.devices[s].count)
      w.ok = 0;
  }
  return w;
}

/* The class part of w fits on n. */
static int
class_fits(const sched_node *n, const need *w) {
  if (!w->class_k)
    return 1;
  uint32_t held, free_usable;
  named_counts(n, &held, &free_usable);
  int cs = sched_pl_node_device(n, SCHED_DEVICE_CLASS);
  uint64_t named_left = free_usable > w->named ? free_usable - w->named : 0;
  return w->class_k <= named_left + anon_free(n, cs, held);
}

int
sched_pl_devices_fit(const sched_node *n, const sched_template *t,
                     const int16_t *slots) {
  need w = need_of(n, t, slots, 1);
  return w.ok && class_fits(n, &w);
}

/*
 * Whether every pod of job fits on n at once (colocate): the Job's
 * requests summed by device, a named device asked for at most once.
 */
int
sched_pl_job_devices_fit(const sched_job *job, const sched_node *n) {
  sched_template all;
  int16_t slots[SCHED_NODE_DEVICES];
  uint32_t counts[SCHED_NODE_DEVICES] = {0};
  sched_device devs[SCHED_NODE_DEVICES];
  memset(&all, 0, sizeof all);
  for (int i = 0; i < job->ntasks; i++) {
    const sched_template *t = &job->tasks[i];
    for (int d = 0; d < t->req.ndevices; d++) {
      int s = sched_pl_node_device(n, t->req.devices[d].name);
      uint64_t want = (uint64_t)t->req.devices[d].count * t->replicas;
      if (s < 0 && want)
        return 0;
      if (s >= 0)
        counts[s] =
            (uint32_t)(counts[s] + want > UINT32_MAX ? UINT32_MAX
                                                     : counts[s] + want);
    }
  }
  for (int s = 0; s < n->capacity.ndevices; s++)
    if (counts[s]) {
      slots[all.req.ndevices] = (int16_t)s;
      devs[all.req.ndevices++] =
          (sched_device){n->capacity.devices[s].name, counts[s], 0};
    }
  all.req.devices = devs;
  return sched_pl_devices_fit(n, &all, slots);
}

/* -------------------------------------------------------------- booking */

static int
by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when a task of job asks for device name by name. */
static int
named_by_job(const sched_job *job, const char *name) {
  for (int i = 0; job && i < job->ntasks; i++)
    if (sched_resources_device(&job->tasks[i].req, name))
      return 1;
  return 0;
}

/* The free named device first in name order that a pod on n may hold,
 * among those job names (mine 1) or those it does not (mine 0); -1. */
static int
first_free(const sched_node *n, const sched_job *job, int mine) {
  int best = -1;
  for (int s = 0; s < n->capacity.ndevices; s++)
    if (is_named(n, s) && !n->dev_used[s] && usable(n, s) &&
        named_by_job(job, n->capacity.devices[s].name) == mine &&
        (best < 0 || strcmp(n->capacity.devices[s].name,
                            n->capacity.devices[best].name) < 0))
      best = s;
  return best;
}

/* Book the counts of t's request on n (sign +1) or give them back (-1):
 * bare counts, and the class's units (named ones included). */
static void
count_request(sched_node *n, const sched_template *t, const int16_t *slots,
              int sign) {
  int cs = -1;
  uint32_t units = 0;
  for (int d = 0; d < t->req.ndevices; d++) {
    int s = slots[d];
    uint32_t want = t->req.devices[d].count;
    if (s < 0 || !want)
      continue;
    if (is_named(n, s) || is_class(n, t, d, s)) {
      cs = sched_pl_node_device(n, SCHED_DEVICE_CLASS);
      units += want;
      continue;
    }
    n->dev_used[s] = sign > 0                ? n->dev_used[s] + want
                     : n->dev_used[s] > want ? n->dev_used[s] - want
                                             : 0;
  }
  if (cs >= 0)
    n->dev_used[cs] = sign > 0                  ? n->dev_used[cs] + units
                      : n->dev_used[cs] > units ? n->dev_used[cs] - units
                                                : 0;
}

/* Hold named device s for b; its name is added to b->devices (room made
 * by the caller). */
static int
hold(sched_node *n, int s, sched_binding *b) {
  char *name = strdup(n->capacity.devices[s].name);
  if (!name)
    return -ENOMEM;
  n->dev_used[s] = 1;
  b->devices[b->ndevices++] = name;
  return 0;
}

static void
drop_names(sched_binding *b) {
  for (int i = 0; i < b->ndevices; i++)
    free(b->devices[i]);
  free(b->devices);
  b->devices = NULL;
  b->ndevices = 0;
}

/* Undo a booking made by sched_pl_take_devices that ran out of memory. */
static void
untake(sched_node *n, const sched_template *t, const int16_t *slots,
       sched_binding *b) {
  sched_pl_give_devices(n, t, slots, b);
  drop_names(b);
}

/* Take k class units on n for b: free named devices its Job does not ask
 * for by name first, then anonymous units (anon of them are free), then
 * the ones it names (which its other pods would lack otherwise). */
static int
take_class(sched_node *n, uint64_t k, uint64_t anon, const sched_job *job,
           sched_binding *b) {
  int rc = 0, s;
  while (k && !rc && (s = first_free(n, job, 0)) >= 0) {
    rc = hold(n, s, b);
    k--;
  }
  k -= k < anon ? k : anon;
  while (k && !rc && (s = first_free(n, job, 1)) >= 0) {
    rc = hold(n, s, b);
    k--;
  }
  return rc;
}

int
sched_pl_take_devices(sched_node *n, const sched_template *t,
                      const int16_t *slots, const sched_job *job,
                      sched_binding *b) {
  need w = need_of(n, t, slots, 1);
  uint32_t held, free_usable;
  b->ndevices = 0;
  b->devices = NULL;
  if (!w.named && !w.class_k) {
    count_request(n, t, slots, +1);
    return 0;
  }
  named_counts(n, &held, &free_usable);
  uint64_t anon =
      anon_free(n, sched_pl_node_device(n, SCHED_DEVICE_CLASS), held);
  uint64_t room = w.named + (w.class_k < n->nnamed ? w.class_k : n->nnamed);
  if (!(b->devices = calloc(room, sizeof *b->devices)))
    return -ENOMEM;
  count_request(n, t, slots, +1);
  int rc = 0;
  for (int d = 0; d < t->req.ndevices && !rc; d++)
    if (t->req.devices[d].count && is_named(n, slots[d]))
      rc = hold(n, slots[d], b);
  if (!rc)
    rc = take_class(n, w.class_k, anon, job, b);
  if (rc) {
    untake(n, t, slots, b);
    return rc;
  }
  qsort(b->devices, (size_t)b->ndevices, sizeof *b->devices, by_name);
  return 0;
}

void
sched_pl_give_devices(sched_node *n, const sched_template *t,
                      const int16_t *slots, const sched_binding *b) {
  count_request(n, t, slots, -1);
  for (int i = 0; i < b->ndevices; i++) {
    int s = sched_pl_node_device(n, b->devices[i]);
    if (is_named(n, s))
      n->dev_used[s] = 0;
  }
}

/*
 * A binding made elsewhere (sched_book): its named devices must be free
 * named devices of n the pod may hold, every one the request names among
 * them, the others no more than its class units, and the units left for
 * anonymous ones free. Books them; BUS_ECONFLICT otherwise (n unchanged).
 */
int
sched_pl_book_given(sched_node *n, const sched_template *t,
                    const int16_t *slots, const sched_binding *b) {
  need w = need_of(n, t, slots, 1);
  uint32_t held, free_usable, named_asked = 0;
  named_counts(n, &held, &free_usable);
  int cs = sched_pl_node_device(n, SCHED_DEVICE_CLASS);
  int ok = w.ok && (uint64_t)b->ndevices <= w.named + w.class_k;
  for (int i = 0; i < b->ndevices && ok; i++) {
    int s = sched_pl_node_device(n, b->devices[i]);
    ok = is_named(n, s) && !n->dev_used[s] && usable(n, s) &&
         (i == 0 || strcmp(b->devices[i - 1], b->devices[i]) < 0);
    for (int d = 0; d < t->req.ndevices && ok; d++)
      named_asked += slots[d] == s && t->req.devices[d].count;
  }
  uint64_t extra = (uint64_t)b->ndevices - named_asked;
  if (!ok || named_asked != w.named ||
      w.class_k - (extra < w.class_k ? extra : w.class_k) >
          anon_free(n, cs, held))
    return BUS_ECONFLICT;
  count_request(n, t, slots, +1);
  for (int i = 0; i < b->ndevices; i++)
    n->dev_used[sched_pl_node_device(n, b->devices[i])] = 1;
  return 0;
}

void
sched_pl_binding_clear(sched_binding *b) {
  drop_names(b);
}

unsigned
sched_pl_binding_runtime(const sched_node *n, const sched_template *t,
                         const sched_binding *b) {
  for (int i = 0; i < b->ndevices; i++) {
    int s = sched_pl_node_device(n, b->devices[i]);
    if (is_named(n, s) && (n->capacity.devices[s].flags & SCHED_DEV_SUBNET))
      return SCHED_RT_RAW_NETNS;
  }
  return sched_runtime_bit(t->runtime);
}

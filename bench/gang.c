/*
 * gang.c - the gang-burst figure (gang.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fleet.h"
#include "gang.h"

int
gang_job_index(const char *name) {
  if (strncmp(name, "job", 3) || name[3] < '0' || name[3] > '9')
    return -1;
  return atoi(name + 3);
}

int
gang_job_of(const msgpack_object *data) {
  char job[32];
  if (!bus_obj_str(data, "job", job, sizeof job))
    return -1;
  return gang_job_index(job);
}

void
gang_submit(bus_conn *c, int jobs, int pods, int rate) {
  int64_t start = bus_wall_ns();
  for (int i = 0; i < jobs; i++) {
    char name[32];
    fleet_pace(start, i, rate > 0 ? (rate + pods - 1) / pods : 0);
    snprintf(name, sizeof name, "job%d", i);
    bench_add_job(c, name, pods, "spread");
  }
}

/* The stored time of each Job's job.placed, by Job index. */
static void
placed_times(bus_conn *c, int64_t *placed, int jobs) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = "lark.ev.placement.default";
  bus_reader *r;
  bus_batch *b;
  if (bus_reader_open(c, &o, &r) || bus_batch_new(&b))
    bench_die("reader", bus_last_error());
  int rc;
  do { /* the last batch comes with BUS_EEOF */
    rc = bus_reader_next(r, b, 2000);
    for (size_t i = 0; i < bus_batch_len(b); i++) {
      const bus_event *ev = bus_batch_event(b, i);
      int64_t stored = 0;
      bus_batch_meta(b, i, NULL, NULL, &stored);
      int j =
          ev && !strcmp(ev->type, "job.placed") ? gang_job_of(&ev->data) : -1;
      if (j >= 0 && j < jobs && !placed[j])
        placed[j] = stored;
    }
  } while (rc == 0);
  bus_batch_free(b);
  bus_reader_close(r);
}

/* Which leg of a desired state's way is reported. */
enum { LEG_ALL, LEG_STORE, LEG_FETCH };

static int64_t
leg(const gang_seen *s, int64_t placed, int which) {
  if (which == LEG_STORE)
    return s->stored - placed;
  if (which == LEG_FETCH)
    return s->ns - s->stored;
  return s->ns - placed;
}

/* The latest ns of Job j's among seen[0..n), 0 when none; the earliest
 * into *first when first is not NULL. */
static int64_t
last_at(const gang_seen *seen, long n, int j, int64_t *first) {
  int64_t at = 0, early = 0;
  for (long i = 0; i < n; i++) {
    if (seen[i].job != j)
      continue;
    at = seen[i].ns > at ? seen[i].ns : at;
    early = !early || seen[i].ns < early ? seen[i].ns : early;
  }
  if (first)
    *first = early;
  return at;
}

/* Per Job (the first 20): from its binding to its first and last
 * desired state stored, to its last at a node, and to its first and last
 * pushed copy at a node (when there are any): where a gang's time goes
 * before its first desired state leaves (the scheduler) and while they
 * drain (the broker). */
static void
per_job(const gang_seen *seen, long n, const gang_seen *pushed, long np,
        const int64_t *placed, int jobs) {
  for (int j = 0; j < jobs && j < 20; j++) {
    int64_t first = INT64_MAX, last = 0, first_push;
    int64_t at = last_at(seen, n, j, NULL);
    int64_t push = last_at(pushed, np, j, &first_push);
    for (long i = 0; i < n; i++) {
      if (seen[i].job != j)
        continue;
      first = seen[i].stored < first ? seen[i].stored : first;
      last = seen[i].stored > last ? seen[i].stored : last;
    }
    if (!last || !placed[j])
      continue;
    printf("  job%-3d binding -> first stored %6.1f ms, last stored %6.1f "
           "ms, last at its node %6.1f ms",
           j, (double)(first - placed[j]) / 1e6,
           (double)(last - placed[j]) / 1e6, (double)(at - placed[j]) / 1e6);
    if (push)
      printf(", pushed first %6.1f, last %6.1f ms",
             (double)(first_push - placed[j]) / 1e6,
             (double)(push - placed[j]) / 1e6);
    printf("\n");
  }
}

/* From each pushed copy's binding to its node (its "stored" unused). */
static void
pushed_report(const gang_seen *pushed, long np, const int64_t *placed,
              int jobs) {
  fleet_lat_reset();
  for (long i = 0; i < np; i++)
    if (pushed[i].job >= 0 && pushed[i].job < jobs && placed[pushed[i].job])
      fleet_lat_add(pushed[i].ns - placed[pushed[i].job]);
  fleet_lat_report("binding -> node, pushed");
}

void
gang_report(bus_conn *c, const gang_seen *seen, long n, const gang_seen *pushed,
            long np, int jobs) {
  static const char *const what[] = {"binding -> node, stored",
                                     "  binding -> node stream",
                                     "  node stream -> node"};
  int64_t *placed = calloc((size_t)jobs, sizeof *placed);
  if (!placed)
    bench_die("memory", "out of memory");
  placed_times(c, placed, jobs);
  if (np)
    pushed_report(pushed, np, placed, jobs);
  long missing = 0;
  for (int which = LEG_ALL; which <= LEG_FETCH; which++) {
    fleet_lat_reset();
    missing = 0;
    for (long i = 0; i < n; i++) {
      const gang_seen *s = &seen[i];
      if (s->job >= 0 && s->job < jobs && placed[s->job])
        fleet_lat_add(leg(s, placed[s->job], which));
      else
        missing++;
    }
    fleet_lat_report(what[which]);
  }
  per_job(seen, n, pushed, np, placed, jobs);
  free(placed);
  if (missing)
    printf("gang: %ld desired states without a job.placed\n", missing);
}

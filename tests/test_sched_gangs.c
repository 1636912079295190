/*
 * test_sched_gangs.c - gangs applied at once reach their nodes one after
 * another, each from its own placement: a real lark-scheduler is given
 * three Jobs of 600 pods together; each Job's job.placed is stored only
 * once every desired state of the gang placed before it is on its node's
 * stream (a gang's desired states go out in a pass of their own, the
 * next gang placed in the pass after, alone), while the placement log
 * keeps one job.placed per Job, each on top of the one before, and the
 * replay equals the live view.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "cmd_check.h"
#include "natsd.h"
#include "stream.h"
#include "test_sched_util.h"

#define GANGS 3
#define PODS 600
#define NODES 2

LT_SCHED_SUITE(sched_gangs, "gangs");

static void
node(int i) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"g%d\"},\"spec\":{"
           "\"cluster\":\"c1\",\"runtimes\":[\"raw\"],\"capacity\":{"
           "\"cpu\":4000,\"memory\":4000000}}}}",
           i);
  lt_must_apply(conn, "node", json);
}

typedef struct gang {
  char name[32];
  pthread_t th;
  int ok;
  int64_t placed; /* its job.placed's stored time */
  int64_t last;   /* its last desired state's on a node stream */
  long desired;   /* its desired states found */
} gang;

static void *
apply_gang(void *arg) {
  gang *g = arg;
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"tasks\":[{\"name\":\"w\",\"role\":\"Actor\",\"replicas\":%d,"
           "\"resources\":{\"cpu\":1,\"memory\":1},"
           "\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]}}}",
           g->name, PODS);
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object r;
  char out[64] = "";
  if (!lt_command(conn, "job", "apply", json_loads(json, 0, NULL), &z, &r))
    bus_obj_str(&r, "result", out, sizeof out);
  g->ok = !strcmp(out, "created");
  msgpack_zone_destroy(&z);
  return NULL;
}

static gang *
gang_of(gang *g, const char *job) {
  for (int i = 0; i < GANGS; i++)
    if (!strcmp(g[i].name, job))
      return &g[i];
  return NULL;
}

/* A job.placed on the placement log: its gang's first one's time. */
static void
take_placed(const bus_event *ev, void *arg) {
  char job[32] = "";
  bus_obj_str(&ev->data, "job", job, sizeof job);
  gang *g = gang_of(arg, job);
  if (g && !g->placed)
    g->placed = ev->stored_ns;
}

static void
take_desired(const bus_event *ev, void *arg) {
  char job[32] = "";
  if (strcmp(ev->type, "pod.desired"))
    return;
  bus_obj_str(&ev->data, "job", job, sizeof job);
  gang *g = gang_of(arg, job);
  if (!g)
    return;
  g->desired++;
  if (ev->stored_ns > g->last)
    g->last = ev->stored_ns;
}

/* Every gang's desired states, read from the node streams. */
static long
read_desired(gang *g) {
  long n = 0;
  for (int i = 0; i < GANGS; i++)
    g[i].desired = 0, g[i].last = 0;
  for (int i = 0; i < NODES; i++) {
    char name[16], stream[64];
    snprintf(name, sizeof name, "g%d", i);
    cr_assert_eq(bus_node_stream_name(name, stream, sizeof stream), 0);
    lt_read_stream(conn, stream, NULL, 500, 1, take_desired, g);
  }
  for (int i = 0; i < GANGS; i++)
    n += g[i].desired;
  return n;
}

static int
by_placed(const void *a, const void *b) {
  const gang *x = a, *y = b;
  return x->placed < y->placed ? -1 : x->placed > y->placed;
}

Test(sched_gangs, each_gang_is_placed_once_the_one_before_is_sent) {
  for (int i = 0; i < NODES; i++)
    node(i);
  gang g[GANGS];
  memset(g, 0, sizeof g);
  for (int i = 0; i < GANGS; i++) {
    snprintf(g[i].name, sizeof g[i].name, "gang%d", i);
    cr_assert_eq(pthread_create(&g[i].th, NULL, apply_gang, &g[i]), 0);
  }
  for (int i = 0; i < GANGS; i++) {
    pthread_join(g[i].th, NULL);
    cr_expect(g[i].ok, "%s was not created", g[i].name);
  }
  long n = 0;
  for (int k = 0; k < 300 && (n = read_desired(g)) < GANGS * PODS; k++)
    usleep(100 * 1000);
  cr_assert_eq(n, GANGS * PODS, "%ld of %d desired states on node streams", n,
               GANGS * PODS);
  ts_placement_log w = {.on_placed = take_placed, .ud = g};
  ts_read_placement(conn, &w);
  cr_expect_eq(w.placed, GANGS, "one job.placed per Job, %d found", w.placed);
  cr_expect_eq(w.chained, w.placed, "%d of %d on top of the one before",
               w.chained, w.placed);
  qsort(g, GANGS, sizeof *g, by_placed);
  for (int i = 1; i < GANGS; i++)
    cr_expect_geq(g[i].placed, g[i - 1].last,
                  "%s placed %.1f ms before the last desired state of %s "
                  "was stored",
                  g[i].name, (double)(g[i - 1].last - g[i].placed) / 1e6,
                  g[i - 1].name);
  lt_expect_replay(conn, "scheduler", 25, 0);
}

/*
 * engine_bed.h - what the tests of the node's RL engine side share
 * (tests/test_edge_engine*.c): they play lark-engine, writing its
 * projections to the node's stream as it would, and the scheduler,
 * writing pod.desired (job j, task j-a, tests/support/bed.h), and read
 * what the node sends on its ingress. Pods run Python scripts with
 * larkbus.Run. Header-only: each test file is one executable.
 */
#ifndef LARK_TEST_ENGINE_BED_H
#define LARK_TEST_ENGINE_BED_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "store.h"

static lt_natsd srv;
static bus_conn *conn;
static bus_consumer *ingress;
static char dir[256];
static pid_t edge_pid;
static uint64_t version = 100;

/* A stage's latest started step, for stages(). */
typedef struct eb_stage {
  const char *stage;
  uint64_t step, weights;
} eb_stage;

static void
eb_append(const char *what, const char *type, msgpack_sbuffer *sb) {
  char id[33], subject[256];
  bus_event ev;
  lt_event(&ev, id, type, "lark-engine", bus_wall_ns(), 0, sb);
  snprintf(subject, sizeof subject, "lark.node.n1.engine.j.%s", what);
  cr_assert_eq(bus_append(conn, subject, &ev, 0, NULL, NULL), 0, "%s",
               bus_last_error());
  msgpack_sbuffer_destroy(sb);
}

/* engine.stages of job j at version v (0: the next), as lark-engine
 * writes it: the n stages started, loaders (NULL-terminated, may be
 * NULL), ended. */
static void
eb_stages(uint64_t v, const eb_stage *st, int n, const char *const *loaders,
          int ended) {
  bus_stage_state s[4];
  bus_str l[8];
  uint32_t nl = 0;
  for (int i = 0; i < n; i++)
    s[i] = (bus_stage_state){.stage = bus_str_of(st[i].stage),
                             .step = st[i].step,
                             .has_weights = 1,
                             .weights = st[i].weights,
                             .has_ts = 1,
                             .ts = bus_wall_ns()};
  for (; loaders && loaders[nl]; nl++)
    l[nl] = bus_str_of(loaders[nl]);
  bus_ev_engine_stages d = {.job = BUS_STR("j"),
                            .has_version = 1,
                            .version = v ? v : ++version,
                            .has_mode = 1,
                            .mode = BUS_STR("sequential"),
                            .has_stages = 1,
                            .stages = {s, (uint32_t)n},
                            .has_loaders = nl > 0,
                            .loaders = {l, nl},
                            .has_ended = ended,
                            .ended = ended};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_stages_pack(&sb, &d), 0, "%s", bus_last_error());
  eb_append("stages", "engine.stages", &sb);
}

/* engine.peers of job j: pods p (NULL-terminated), each of task j-a on
 * n1 at address 10.0.0.<i+1>. */
static void
eb_peers(const char *const *pods) {
  bus_peer p[8];
  char addr[8][32];
  uint32_t n = 0;
  for (; pods[n]; n++) {
    snprintf(addr[n], sizeof addr[n], "10.0.0.%u", n + 1);
    p[n] = (bus_peer){.pod = bus_str_of(pods[n]),
                      .task = BUS_STR("j-a"),
                      .has_role = 1,
                      .role = BUS_STR("Rollout"),
                      .node = BUS_STR("n1"),
                      .has_cluster = 1,
                      .cluster = BUS_STR("local"),
                      .has_address = 1,
                      .address = bus_str_of(addr[n]),
                      .has_attempt = 1,
                      .attempt = 0,
                      .has_phase = 1,
                      .phase = BUS_STR("Running")};
  }
  bus_ev_engine_peers d = {.job = BUS_STR("j"),
                           .has_version = 1,
                           .version = ++version,
                           .has_peers = 1,
                           .peers = {p, n}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_peers_pack(&sb, &d), 0, "%s", bus_last_error());
  eb_append("peers", "engine.peers", &sb);
}

/* Whether the node's store holds job j's what, within seconds (want 1)
 * or no longer holds it (want 0). The store is LMDB: the test opens it
 * beside the running agent. */
static int
eb_stored(const char *what, int want, int seconds) {
  char path[512];
  snprintf(path, sizeof path, "%s/n1/store", dir);
  for (int i = 0; i < seconds * 10; i++, usleep(100 * 1000)) {
    edge_store *s = NULL;
    if (edge_store_open(&s, path))
      continue;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int has = edge_store_engine_get(s, "j", what, &sb) == 0;
    msgpack_sbuffer_destroy(&sb);
    edge_store_close(s);
    if (has == want)
      return 1;
  }
  return 0;
}

#endif

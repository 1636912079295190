/*
 * fuzz_engine_report.c - libFuzzer harness for lark-engine's ingress
 * (services/engine/ingress_check.c): what a node sends on
 * lark.in.<node>.engine.>, decoded and checked against a view holding a
 * running Job.
 *
 * The input is the subject, a newline, then the message's body (the
 * msgpack envelope a node appends). The body is decoded as the ingress
 * decodes it (typed); a stage.report or weights.report is routed and
 * checked against the view, which must answer without failing as a
 * store, with a verdict the ingress knows and, unless accepted, a reason.
 * The view (Job j: a learner on n1, samplers on n1 and n2, rollout 0
 * started) is made once and removed at exit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "bus.h"
#include "engine-ingress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static bus_view *view;
static uint64_t seq;

static void
fail(const char *what) {
  fprintf(stderr, "fuzz_engine_report: %s: %s\n", what, bus_last_error());
  abort();
}

static void
drop_view(void) {
  char cmd[96];
  bus_view_close(view);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    fail("cannot remove the view");
}

static void
feed(const char *subject, bus_type type, const void *d) {
  msgpack_sbuffer sb;
  msgpack_zone z;
  msgpack_object o;
  msgpack_sbuffer_init(&sb);
  msgpack_zone_init(&z, 4096);
  if (bus_data_pack(type, d, &sb) ||
      msgpack_unpack(sb.data, sb.size, NULL, &z, &o) < 0)
    fail("pack");
  bus_txn *t;
  bus_version ver = {0};
  if (!bus_view_read(view, &t)) {
    bus_txn_version(t, subject, &ver);
    bus_txn_end(t);
  }
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.v = 1,
                  .type = bus_type_name(type),
                  .id = id,
                  .ts = (int64_t)++seq,
                  .actor = "f",
                  .cause = "",
                  .prev = ver.seq,
                  .data = o,
                  .subject = subject,
                  .seq = seq};
  const bus_event *evs[1] = {&ev};
  if (bus_view_apply(view, evs, 1))
    fail("apply");
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
}

static void
bind3(void) {
  bus_binding b[3] = {{.pod = BUS_STR("j-learner-0"),
                       .task = BUS_STR("j-learner"),
                       .node = BUS_STR("n1")},
                      {.pod = BUS_STR("j-sampler-0"),
                       .task = BUS_STR("j-sampler"),
                       .node = BUS_STR("n1")},
                      {.pod = BUS_STR("j-sampler-1"),
                       .task = BUS_STR("j-sampler"),
                       .node = BUS_STR("n2")}};
  bus_ev_job_placed p = {
      .pool = BUS_STR("default"), .job = BUS_STR("j"), .bindings = {b, 3}};
  feed("lark.ev.placement.default", BUS_T_JOB_PLACED, &p);
}

static void
make_view(void) {
  snprintf(dir, sizeof dir, "/tmp/fuzz-engview-XXXXXX");
  if (!mkdtemp(dir))
    fail("mkdtemp");
  atexit(drop_view);
  bus_view_def def;
  engine_view_def(&def);
  def.decide = NULL;
  bus_view_opts o;
  bus_view_opts_init(&o);
  o.dir = dir;
  o.nosync = 1;
  o.map_size = (size_t)16 << 20;
  if (bus_view_open(&view, &def, &o))
    fail("open");
  bus_task tasks[2] = {{.name = BUS_STR("learner"), .role = BUS_STR("Actor")},
                       {.name = BUS_STR("sampler"),
                        .role = BUS_STR("Rollout"),
                        .has_replicas = 1,
                        .replicas = 2}};
  bus_job_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                   .kind = BUS_STR("Job"),
                   .metadata = {.name = BUS_STR("j")},
                   .spec = {.tasks = {tasks, 2}}};
  feed("lark.ev.job.j", BUS_T_JOB_SUBMITTED, &r);
  bind3();
  bus_ev_stage_started s = {.job = BUS_STR("j"), .stage = BUS_STR("rollout")};
  feed("lark.ev.engine.j", BUS_T_STAGE_STARTED, &s);
}

static void
check(const char *subject, const bus_event *ev) {
  eng_route r;
  eng_verdict v;
  if (eng_route_parse(subject, &r))
    return;
  bus_txn *t;
  if (bus_view_read(view, &t))
    fail("read");
  int rc = 0;
  if (ev->t == BUS_T_STAGE_REPORT && bus_as_stage_report(ev))
    rc = eng_check_stage(t, &r, bus_as_stage_report(ev), &v);
  else if (ev->t == BUS_T_WEIGHTS_REPORT && bus_as_weights_report(ev))
    rc = eng_check_weights(t, &r, bus_as_weights_report(ev), &v);
  else
    v.v = ENG_ACCEPT;
  bus_txn_end(t);
  if (rc)
    fail("check");
  if (v.v < ENG_ACCEPT || v.v > ENG_NOT_YET || (v.v != ENG_ACCEPT && !v.why[0]))
    fail("a verdict without a reason");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!view)
    make_view();
  const uint8_t *nl = memchr(data, '\n', size < 512 ? size : 512);
  if (!nl)
    return 0;
  char subject[512];
  memcpy(subject, data, (size_t)(nl - data));
  subject[nl - data] = 0;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  size_t off = (size_t)(nl - data) + 1;
  if (!bus_event_decode_typed(data + off, size - off, &ev, &z) && ev.typed)
    check(subject, &ev);
  msgpack_zone_destroy(&z);
  return 0;
}

/*
 * test_types.c - the generated event types (bus.h "typed data" and
 * "typed events"): subject builders, bounds checked on pack and unpack
 * with the validator's paths, map sizes counted from the has_ flags,
 * typed events through bus_event_encode and decode, and apply from a
 * table. The golden log's round trip is in test_golden.c.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "bus.h"

/* ------------------------------------------------------------- subjects */

Test(types, subject_builders) {
  char s[BUS_SUBJECT_MAX];
  cr_assert_eq(bus_subj_job_submitted(s, sizeof s, "train"), 0);
  cr_assert_str_eq(s, "lark.ev.job.train");
  cr_assert_eq(bus_subj_pod_desired(s, sizeof s, "gpu-1", "train-a-0"), 0);
  cr_assert_str_eq(s, "lark.node.gpu-1.pod.train-a-0");
  cr_assert_eq(bus_subj_ca_published(s, sizeof s), 0);
  cr_assert_str_eq(s, "lark.ev.cert.ca");
  cr_assert_eq(bus_subj_log_batch_in(s, sizeof s, "n1", "p-0"), 0);
  cr_assert_str_eq(s, "lark.in.n1.logs.p-0");
  cr_assert_eq(bus_subj_log_batch_log(s, sizeof s, "j", "j-t", "j-t-0"), 0);
  cr_assert_str_eq(s, "lark.log.j.j-t.j-t-0");
  cr_assert_eq(bus_subj_route_set(s, sizeof s, "d", "c", "p"), 0);
  cr_assert_str_eq(s, "lark.route.d.c.p");
}

Test(types, a_bad_token_is_refused) {
  char s[BUS_SUBJECT_MAX], long_name[80], derived[260];
  const char *bad[] = {"", "a.b", "*", ">", "Train", "-a", "a-", "a b", NULL};
  for (int i = 0; bad[i]; i++) {
    cr_assert_eq(bus_subj_job_submitted(s, sizeof s, bad[i]), BUS_ENAME,
                 "'%s' taken", bad[i]);
    cr_assert_str_eq(s, "");
    cr_assert(strstr(bus_last_error(), "<job>"), "%s", bus_last_error());
  }
  cr_assert_eq(bus_subj_job_submitted(s, sizeof s, NULL), BUS_ENAME);
  memset(long_name, 'a', 64);
  long_name[64] = 0; /* a Job's name is at most 63 */
  cr_assert_eq(bus_subj_job_submitted(s, sizeof s, long_name), BUS_ENAME);
  long_name[63] = 0;
  cr_assert_eq(bus_subj_job_submitted(s, sizeof s, long_name), 0);
  memset(derived, 'a', 253);
  derived[253] = 0; /* a pod's derived name may be 253 */
  cr_assert_eq(bus_subj_pod_phase(s, sizeof s, derived), 0);
  /* the second token is checked too, and the first stays unwritten */
  cr_assert_eq(bus_subj_pod_desired(s, sizeof s, "n1", "P"), BUS_ENAME);
  cr_assert(strstr(bus_last_error(), "<pod>"), "%s", bus_last_error());
  cr_assert_eq(bus_subj_job_submitted(s, 10, "train"), BUS_EINVAL);
  cr_assert_str_eq(s, "");
}

/* A node-stream subject and its push subject map one onto the other,
 * both ways; anything else is refused, a subject under neither prefix
 * without error text (the outbox asks it of every entry). */
Test(types, node_push_subjects_map_both_ways) {
  char push[BUS_SUBJECT_MAX], back[BUS_SUBJECT_MAX], tiny[16];
  cr_assert_eq(
      bus_node_push_subject("lark.node.gpu-1.pod.a-0", push, sizeof push), 0);
  cr_assert_str_eq(push, "lark.push.gpu-1.pod.a-0");
  cr_assert_eq(bus_node_pushed_subject(push, back, sizeof back), 0);
  cr_assert_str_eq(back, "lark.node.gpu-1.pod.a-0");
  const char *bad[] = {"lark.node.gpu-1", "lark.node..pod", "lark.node.n.",
                       "lark.node.", NULL};
  for (int i = 0; bad[i]; i++) {
    cr_assert_eq(bus_node_push_subject(bad[i], push, sizeof push), BUS_EINVAL,
                 "'%s' taken", bad[i]);
    cr_assert(strstr(bus_last_error(), bad[i]), "%s", bus_last_error());
  }
  cr_assert_eq(bus_node_pushed_subject("lark.push.n", back, sizeof back),
               BUS_EINVAL);
  cr_assert_eq(bus_node_pushed_subject("lark.node.n.pod.a", back, sizeof back),
               BUS_EINVAL);
  cr_assert_eq(bus_node_push_subject("lark.ev.job.a", push, sizeof push),
               BUS_EINVAL);
  cr_assert_eq(
      bus_node_push_subject("lark.node.gpu-1.pod.a-0", tiny, sizeof tiny),
      BUS_EINVAL, "a subject that does not fit is refused");
}

/* --------------------------------------------------------------- bounds */

Test(types, an_overlong_string_is_refused_with_its_path) {
  static char reason[1100];
  msgpack_sbuffer sb;
  memset(reason, 'x', 1025);
  bus_ev_job_stopped d = {.has_reason = 1, .reason = bus_str_of(reason)};
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_job_stopped_pack(&sb, &d), BUS_EFIELD);
  cr_assert_eq(sb.size, 0, "a refused pack leaves the buffer as it was");
  cr_assert(strstr(bus_last_error(), "data.reason: must be a string of 0 to "
                                     "1024 bytes"),
            "%s", bus_last_error());
  reason[1024] = 0;
  d.reason = bus_str_of(reason);
  cr_assert_eq(bus_job_stopped_pack(&sb, &d), 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

Test(types, nested_fields_are_named_by_their_path) {
  bus_binding b[2] = {
      {.pod = BUS_STR("j-t-0"), .task = BUS_STR("j-t"), .node = BUS_STR("n1")},
      {.pod = BUS_STR("j-t-1"),
       .task = BUS_STR("j-t"),
       .node = BUS_STR("N_1")}};
  bus_ev_job_placed d = {
      .pool = BUS_STR("default"), .job = BUS_STR("j"), .bindings = {b, 2}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_job_placed_pack(&sb, &d), BUS_ENAME);
  cr_assert(strstr(bus_last_error(), "data.bindings[1].node:"), "%s",
            bus_last_error());
  b[1].node = BUS_STR("n2");
  b[1].has_attempt = 1, b[1].attempt = 1001; /* max 1000 */
  cr_assert_eq(bus_job_placed_pack(&sb, &d), BUS_EFIELD);
  cr_assert(strstr(bus_last_error(), "data.bindings[1].attempt:"), "%s",
            bus_last_error());
  d.bindings.n = 0; /* bindings has no min_items */
  cr_assert_eq(bus_job_placed_pack(&sb, &d), 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

Test(types, unpack_checks_what_it_is_given) {
  bus_packbuf b;
  msgpack_zone z;
  msgpack_object o;
  bus_ev_pod_forgotten d;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "pod", "p-0");
  bus_pack_str(&b.pk, "extra");
  msgpack_pack_nil(&b.pk);
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(msgpack_unpack(b.sb.data, b.sb.size, NULL, &z, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(bus_pod_forgotten_unpack(&o, &z, &d), BUS_EFIELD);
  cr_assert(strstr(bus_last_error(), "data.extra: unknown field"), "%s",
            bus_last_error());
  o.via.map.size = 1;
  cr_assert_eq(bus_pod_forgotten_unpack(&o, &z, &d), 0, "%s", bus_last_error());
  cr_assert(bus_str_eq(d.pod, "p-0") && !d.has_version);
  msgpack_zone_destroy(&z);
  bus_packbuf_destroy(&b);
}

/* ----------------------------------------------------- packing, counted */

Test(types, map_sizes_follow_the_presence_flags) {
  uint64_t gpus[] = {0, 3};
  bus_ev_pod_report r = {.pod = BUS_STR("p-0"), .phase = BUS_STR("Running")};
  msgpack_sbuffer sb;
  msgpack_zone z;
  msgpack_object o;
  msgpack_sbuffer_init(&sb);
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(bus_pod_report_pack(&sb, &r), 0, "%s", bus_last_error());
  cr_assert_eq(msgpack_unpack(sb.data, sb.size, NULL, &z, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(o.via.map.size, 2);
  r.has_exitCode = 1, r.exitCode = -1;
  r.has_localIP = 1, r.localIP = BUS_STR("10.0.0.2");
  msgpack_sbuffer_clear(&sb);
  cr_assert_eq(bus_pod_report_pack(&sb, &r), 0, "%s", bus_last_error());
  cr_assert_eq(msgpack_unpack(sb.data, sb.size, NULL, &z, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(o.via.map.size, 4);
  cr_assert_eq(bus_obj_int(&o, "exitCode", 0), -1);
  /* lists and maps of every kind */
  bus_ev_pod_desired pd = {.pod = BUS_STR("p-0"),
                           .job = BUS_STR("j"),
                           .task = BUS_STR("j-t"),
                           .desired = BUS_STR("Running"),
                           .has_gpus = 1,
                           .gpus = {gpus, 2}};
  msgpack_sbuffer_clear(&sb);
  cr_assert_eq(bus_pod_desired_pack(&sb, &pd), 0, "%s", bus_last_error());
  bus_ev_pod_desired back;
  cr_assert_eq(msgpack_unpack(sb.data, sb.size, NULL, &z, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(bus_pod_desired_unpack(&o, &z, &back), 0, "%s",
               bus_last_error());
  cr_assert(back.has_gpus && back.gpus.n == 2 && back.gpus.v[1] == 3);
  cr_assert(!back.has_raw && !back.has_env);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
}

/* -------------------------------------------------------- typed events */

static void
encode_forgotten(msgpack_sbuffer *sb, const bus_ev_pod_forgotten *d) {
  bus_event ev = {.t = BUS_T_POD_FORGOTTEN,
                  .typed = d,
                  .id = "0123456789abcdef0123456789abcdef",
                  .ts = 5,
                  .actor = "n1",
                  .cause = ""};
  msgpack_sbuffer_init(sb);
  cr_assert_eq(bus_event_encode(&ev, sb), 0, "%s", bus_last_error());
}

Test(types, typed_events_encode_and_decode_once) {
  bus_ev_pod_forgotten d = {
      .pod = BUS_STR("p-0"), .has_version = 1, .version = 42};
  msgpack_sbuffer sb;
  msgpack_zone z;
  bus_event ev = {0};
  encode_forgotten(&sb, &d);
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(bus_event_decode_typed(sb.data, sb.size, &ev, &z), 0, "%s",
               bus_last_error());
  cr_assert_str_eq(ev.type, "pod.forgotten");
  cr_assert_eq(ev.t, BUS_T_POD_FORGOTTEN);
  const bus_ev_pod_forgotten *g = bus_as_pod_forgotten(&ev);
  cr_assert(g && bus_str_eq(g->pod, "p-0") && g->has_version &&
            g->version == 42);
  cr_assert_null(bus_as_job_placed(&ev));
  /* the plain decoder sets the type; the data unpacks on demand */
  bus_event plain = {0};
  const void *p = NULL;
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &plain, &z), 0);
  cr_assert(plain.t == BUS_T_POD_FORGOTTEN && !plain.typed);
  cr_assert_eq(bus_event_typed(&plain, &z, &p), 0, "%s", bus_last_error());
  cr_assert_eq(((const bus_ev_pod_forgotten *)p)->version, 42);
  /* typed data that breaks the schema is refused before it is kept */
  d.pod = BUS_STR("P");
  bus_event bad = {
      .t = BUS_T_POD_FORGOTTEN, .typed = &d, .id = "x", .actor = "n1"};
  size_t before = sb.size;
  cr_assert_eq(bus_event_encode(&bad, &sb), BUS_ENAME);
  cr_assert_eq(sb.size, before);
  /* a type name that contradicts the typed data */
  bad.type = "job.placed";
  d.pod = BUS_STR("p-0");
  cr_assert_eq(bus_event_encode(&bad, &sb), BUS_EINVAL);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
}

Test(types, names_and_enums) {
  cr_assert_eq(bus_type_of("job.placed"), BUS_T_JOB_PLACED);
  cr_assert_str_eq(bus_type_name(BUS_T_JOB_PLACED), "job.placed");
  cr_assert_eq(bus_type_of("job.nothing"), BUS_T_UNKNOWN);
  cr_assert_null(bus_type_name(BUS_T_UNKNOWN));
  cr_assert_null(bus_type_name(BUS_T__COUNT));
  cr_assert_eq(bus_type_size(BUS_T_JOB_PLACED), sizeof(bus_ev_job_placed));
  for (int t = 1; t < BUS_T__COUNT; t++)
    cr_assert_eq(bus_type_of(bus_type_name((bus_type)t)), t);
}

/* ------------------------------------------------------------ dispatch */

typedef struct seen {
  int forgotten, other;
  uint64_t version;
} seen;

static int
on_forgotten(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  const bus_ev_pod_forgotten *d = data;
  seen *s = ud;
  (void)t, (void)ev;
  s->forgotten++;
  s->version = d->version;
  return 0;
}

static int
on_other(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)t, (void)ev, (void)data;
  ((seen *)ud)->other++;
  return 7;
}

Test(types, apply_from_a_table) {
  static const bus_apply_table tab = {
      .on = {[BUS_T_POD_FORGOTTEN] = on_forgotten}, .other = on_other};
  static const bus_apply_table quiet = {
      .on = {[BUS_T_POD_FORGOTTEN] = on_forgotten}};
  bus_ev_pod_forgotten d = {
      .pod = BUS_STR("p-0"), .has_version = 1, .version = 9};
  msgpack_sbuffer sb;
  msgpack_zone z;
  bus_event typed = {0}, plain = {0};
  seen s = {0};
  encode_forgotten(&sb, &d);
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(bus_event_decode_typed(sb.data, sb.size, &typed, &z), 0);
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &plain, &z), 0);
  cr_assert_eq(bus_apply_dispatch(&tab, NULL, &typed, &s), 0);
  cr_assert_eq(bus_apply_dispatch(&tab, NULL, &plain, &s), 0);
  cr_assert(s.forgotten == 2 && s.version == 9);
  plain.t = BUS_T_JOB_PLACED; /* no handler: other, or nothing */
  plain.typed = &d;
  cr_assert_eq(bus_apply_dispatch(&tab, NULL, &plain, &s), 7);
  cr_assert_eq(bus_apply_dispatch(&quiet, NULL, &plain, &s), 0);
  cr_assert_eq(s.other, 1);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
}

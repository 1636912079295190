/*
 * test_schema.c - bus_schema_check and bus_schema_has_type against the
 * tables generated from schema/schema.yaml: valid resources and events,
 * every limit kind, nested paths, several problems in one check.
 *
 * Inputs are written as JSON and packed to msgpack (integers stay
 * integers, reals become floats), so each case reads like a manifest.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>
#include <msgpack.h>

#include "bus.h"
#include "cmd.h"
#include "json.h"

/* The object for json, unpacked into z (which owns it). */
static msgpack_object
obj(msgpack_zone *z, const char *json) {
  bus_packbuf b;
  msgpack_object o;
  json_error_t jerr;
  json_t *j = json_loads(json, JSON_DECODE_ANY, &jerr);
  cr_assert_not_null(j, "bad JSON in test: %s: %s", jerr.text, json);
  bus_packbuf_init(&b);
  lt_pack_json(&b.pk, j);
  json_decref(j);
  cr_assert_eq(lt_unpack_into(z, b.sb.data, b.sb.size, &o),
               MSGPACK_UNPACK_SUCCESS);
  bus_packbuf_destroy(&b);
  return o;
}

static msgpack_zone *zone;

static void
setup(void) {
  zone = msgpack_zone_new(4096);
}

static void
teardown(void) {
  msgpack_zone_free(zone);
}

TestSuite(schema, .init = setup, .fini = teardown);

#define TASK                                                                   \
  "{\"name\": \"actor\", \"role\": \"Actor\", \"replicas\": 2, "               \
  "\"maxRetries\": 1, \"head\": true, "                                        \
  "\"nodeSelector\": {\"rlark.io/zone\": \"a\"}, "                             \
  "\"resources\": {\"cpu\": 8, \"memory\": 65536, \"gpu\": 4, "                \
  "\"devices\": {\"rlinf.io/device\": 2}}, "                                   \
  "\"runtime\": {\"raw\": {\"artifact\": \"s3://b/a.tgz\", "                   \
  "\"entrypoint\": [\"python\", \"train.py\"], "                               \
  "\"environment\": [{\"name\": \"A\", \"value\": \"1\"}]}}}"

#define JOB_SPEC(tasks)                                                        \
  "{\"domain\": \"net-1\", \"stopped\": false, \"strategy\": \"pack\", "       \
  "\"sshPublicKey\": \"ssh-ed25519 AAAA\", \"workingDir\": \"/w\", "           \
  "\"tasks\": [" tasks "]}"

#define JOB(spec)                                                              \
  "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\", "                \
  "\"metadata\": {\"name\": \"job-1\", \"labels\": {\"team\": \"rl\"}}, "      \
  "\"spec\": " spec "}"

static int
check(const char *name, const char *json, bus_field_err *errs, int max,
      int *n) {
  msgpack_object o = obj(zone, json);
  return bus_schema_check(name, &o, errs, max, n);
}

/* One problem expected: its code, path and a word of its reason. */
static void
expect_one(const char *name, const char *json, int code, const char *path,
           const char *reason_part) {
  bus_field_err errs[4];
  int n = -1;
  int rc = check(name, json, errs, 4, &n);
  cr_assert_eq(rc, code, "%s: rc %s, want %s (%s)", json, bus_err_name(rc),
               bus_err_name(code), bus_last_error());
  cr_assert_eq(n, 1, "%s: %d problems; first %s: %s", json, n, errs[0].path,
               errs[0].reason);
  cr_assert_str_eq(errs[0].path, path);
  cr_assert(strstr(errs[0].reason, reason_part), "reason '%s' lacks '%s'",
            errs[0].reason, reason_part);
  cr_assert(strstr(bus_last_error(), path), "last error '%s'",
            bus_last_error());
}

static void
expect_ok(const char *name, const char *json) {
  bus_field_err errs[4];
  int n = -1;
  int rc = check(name, json, errs, 4, &n);
  cr_assert_eq(rc, 0, "%s: %s at %s: %s", json, bus_err_name(rc),
               n > 0 ? errs[0].path : "", n > 0 ? errs[0].reason : "");
  cr_assert_eq(n, 0);
}

Test(schema, has_type) {
  static const char *const types[] = {
      "run.reported",       "sample.created",   "sample.updated",
      "sample.deleted",     "job.submitted",    "job.stopped",
      "job.resumed",        "job.deleted",      "job.phase",
      "job.placed",         "node.registered",  "node.ready",
      "node.notready",      "node.cordoned",    "node.uncordoned",
      "workflow.submitted", "workflow.deleted", "domain.created",
      "domain.allocated",   "domain.exhausted", "domain.deleted",
      "cert.issued",        "cert.revoked"};
  size_t i;
  for (i = 0; i < sizeof types / sizeof types[0]; i++)
    cr_assert(bus_schema_has_type(types[i]), "%s missing", types[i]);
  cr_assert_not(bus_schema_has_type("job.exploded"));
  cr_assert_not(bus_schema_has_type("Job"));
  cr_assert_not(bus_schema_has_type(""));
  cr_assert_not(bus_schema_has_type(NULL));
}

Test(schema, unknown_name_and_bad_args) {
  msgpack_object o = obj(zone, "{}");
  int n = 7;
  cr_assert_eq(bus_schema_check("job.exploded", &o, NULL, 0, &n),
               BUS_EUNKNOWN_TYPE);
  cr_assert_eq(n, 0);
  cr_assert(strstr(bus_last_error(), "job.exploded"));
  cr_assert_eq(bus_schema_check("Pod", &o, NULL, 0, NULL), BUS_EUNKNOWN_TYPE);
  cr_assert_eq(bus_schema_check(NULL, &o, NULL, 0, NULL), BUS_EINVAL);
  cr_assert_eq(bus_schema_check("Job", NULL, NULL, 0, NULL), BUS_EINVAL);
}

Test(schema, valid_resources) {
  expect_ok("Job", JOB(JOB_SPEC(TASK)));
  expect_ok("Job", JOB("{\"tasks\": [{\"name\": \"t\", \"role\": \"Env\", "
                       "\"runtime\": {\"raw\": {\"entrypoint\": [\"x\"]}}}], "
                       "\"tensorBoardDir\": \"/tb\", \"prepareScript\": \"a\", "
                       "\"runScript\": \"b\", \"agentType\": \"c\"}"));
  expect_ok("Workflow",
            "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Workflow\", "
            "\"metadata\": {\"name\": \"wf\"}, \"spec\": {\"jobTemplates\": "
            "[{\"name\": \"b\", \"dependencies\": [\"a\"], \"spec\": " JOB_SPEC(
                TASK) "}, {\"name\": \"a\", \"spec\": " JOB_SPEC(TASK) "}]}}");
  expect_ok("Node",
            "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Node\", "
            "\"metadata\": {\"name\": \"gpu-1\"}, \"spec\": {\"cluster\": "
            "\"c1\", \"labels\": {\"rlark.io/gpu\": \"a100\"}, \"addresses\": "
            "[\"10.0.0.5\", \"fd00::5\"], \"runtimes\": [\"raw\", "
            "\"raw+netns\"], \"capacity\": {\"cpu\": 64, \"gpu\": 8}}}");
  expect_ok("Domain",
            "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Domain\", "
            "\"metadata\": {\"name\": \"net-1\"}, \"spec\": {\"cidr\": "
            "\"fd00:1::/64\"}}");
}

Test(schema, valid_events) {
  expect_ok("job.submitted", JOB(JOB_SPEC(TASK)));
  expect_ok("run.reported",
            "{\"kind\": \"metric\", \"values\": {\"step\": 100, \"loss\": "
            "0.25, \"done\": false, \"tag\": \"x\", \"none\": null}}");
  expect_ok("job.phase", "{\"phase\": \"Running\"}");
  expect_ok("job.stopped", "{}");
  expect_ok("node.notready", "{\"lastSeen\": -5, \"reason\": \"quiet\"}");
  expect_ok("job.placed",
            "{\"pool\": \"default\", \"job\": \"j\", \"bindings\": [{\"pod\": "
            "\"j-actor-0\", \"task\": \"j-actor\", \"node\": \"gpu-1\", "
            "\"gpus\": [0, 1], \"runtime\": \"raw+netns\"}]}");
  expect_ok("domain.allocated",
            "{\"domain\": \"d\", \"job\": \"j\", \"addresses\": [{\"pod\": "
            "\"j-a-0\", \"ip\": \"10.9.0.2\"}]}");
  expect_ok("cert.issued",
            "{\"serial\": \"0a1b\", \"format\": \"ssh\", \"role\": \"relay\", "
            "\"subject\": \"hub\", \"notBefore\": 1, \"notAfter\": 2}");
}

Test(schema, nested_paths) {
  expect_one("Job",
             JOB(JOB_SPEC(TASK ", {\"name\": \"b\", \"role\": \"Env\", "
                               "\"replicas\": 0, \"runtime\": {\"raw\": "
                               "{\"entrypoint\": [\"x\"]}}}")),
             BUS_EFIELD, "spec.tasks[1].replicas", "from 1 to 1024");
  expect_one("job.submitted",
             JOB(JOB_SPEC("{\"name\": \"b\", \"role\": \"Env\", \"replicas\": "
                          "1025, \"runtime\": {\"raw\": {\"entrypoint\": "
                          "[\"x\"]}}}")),
             BUS_EFIELD, "data.spec.tasks[0].replicas", "from 1 to 1024");
  expect_one("Job",
             JOB(JOB_SPEC("{\"name\": \"b\", \"role\": \"Env\", \"runtime\": "
                          "{\"raw\": {\"entrypoint\": [\"x\", 5]}}}")),
             BUS_EFIELD, "spec.tasks[0].runtime.raw.entrypoint[1]", "a string");
  expect_one("Job",
             JOB(JOB_SPEC("{\"name\": \"b\", \"role\": \"Env\", \"runtime\": "
                          "{\"raw\": {\"entrypoint\": [\"x\"]}}, "
                          "\"nodeSelector\": {\"zone\": 3}}")),
             BUS_EFIELD, "spec.tasks[0].nodeSelector.zone", "a string");
}

Test(schema, unknown_fields) {
  expect_one("Job", JOB("{\"tasks\": [" TASK "], \"priority\": 3}"), BUS_EFIELD,
             "spec.priority", "unknown field 'priority'");
  expect_one("sample.created", "{\"text\": \"a\", \"colour\": \"red\"}",
             BUS_EFIELD, "data.colour", "unknown field");
}

/* JSON cannot say it (jansson keeps one of the two), so pack by hand. */
Test(schema, duplicate_keys) {
  bus_packbuf pb;
  msgpack_object o;
  bus_field_err errs[4];
  int n;
  bus_packbuf_init(&pb);
  msgpack_pack_map(&pb.pk, 3);
  bus_pack_kv_str(&pb.pk, "text", "a");
  bus_pack_kv_str(&pb.pk, "text", "b");
  bus_pack_str(&pb.pk, "labels");
  msgpack_pack_map(&pb.pk, 2);
  bus_pack_kv_str(&pb.pk, "k", "1");
  bus_pack_kv_str(&pb.pk, "k", "2");
  cr_assert_eq(lt_unpack_into(zone, pb.sb.data, pb.sb.size, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(bus_schema_check("sample.created", &o, errs, 4, &n), BUS_EFIELD);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(errs[0].path, "data.text");
  cr_assert(strstr(errs[0].reason, "twice"));
  cr_assert_str_eq(errs[1].path, "data.labels.k");
  cr_assert(strstr(errs[1].reason, "twice"));
  bus_packbuf_destroy(&pb);
}

Test(schema, non_string_key) {
  bus_packbuf b;
  msgpack_object o;
  bus_field_err errs[2];
  int n;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "text", "t");
  msgpack_pack_int(&b.pk, 7);
  msgpack_pack_int(&b.pk, 7);
  cr_assert_eq(lt_unpack_into(zone, b.sb.data, b.sb.size, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(bus_schema_check("sample.created", &o, errs, 2, &n), BUS_EFIELD);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(errs[0].path, "data");
  cr_assert(strstr(errs[0].reason, "not a string"));
  bus_packbuf_destroy(&b);
}

Test(schema, missing_and_types) {
  expect_one("job.phase", "{}", BUS_EMISSING, "data.phase", "required");
  expect_one("sample.created", "[]", BUS_EFIELD, "data", "a map");
  expect_one("Job", JOB("{\"tasks\": []}"), BUS_EFIELD, "spec.tasks",
             "1 to 64 items");
  expect_one("Job",
             "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\", "
             "\"metadata\": {\"name\": \"j\"}}",
             BUS_EMISSING, "spec", "required");
  expect_one("Job",
             "{\"apiVersion\": \"v1\", \"kind\": \"Job\", \"metadata\": "
             "{\"name\": \"j\"}, \"spec\": {\"tasks\": [" TASK "]}}",
             BUS_EFIELD, "apiVersion", "rlinf.io/v1alpha1");
  expect_one("Job",
             "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Node\", "
             "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"tasks\": [" TASK
             "]}}",
             BUS_EFIELD, "kind", "Job");
  expect_one("job.placed",
             "{\"pool\": \"p\", \"job\": \"j\", \"bindings\": {}}", BUS_EFIELD,
             "data.bindings", "an array");
  expect_one("Job", JOB("{\"tasks\": [" TASK "], \"stopped\": 1}"), BUS_EFIELD,
             "spec.stopped", "a bool");
  expect_one("node.notready", "{\"lastSeen\": 1.5}", BUS_EFIELD,
             "data.lastSeen", "an integer");
  expect_one("run.reported", "{\"kind\": \"m\", \"values\": []}", BUS_EFIELD,
             "data.values", "a map");
}

Test(schema, enums_and_formats) {
  expect_one("job.phase", "{\"phase\": \"Sleeping\"}", BUS_EFIELD, "data.phase",
             "one of Pending, Running");
  expect_one("Job", JOB("{\"tasks\": [" TASK "], \"strategy\": \"random\"}"),
             BUS_EFIELD, "spec.strategy", "spread");
  expect_one("domain.created",
             "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Domain\", "
             "\"metadata\": {\"name\": \"d\"}, \"spec\": {\"cidr\": "
             "\"10.0.0.0/33\"}}",
             BUS_EFIELD, "data.spec.cidr", "CIDR");
  expect_ok("Domain", "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": "
                      "\"Domain\", \"metadata\": {\"name\": \"d\"}, \"spec\": "
                      "{\"cidr\": \"10.1.0.0/16\"}}");
  expect_one("Domain",
             "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Domain\", "
             "\"metadata\": {\"name\": \"d\"}, \"spec\": {\"cidr\": "
             "\"10.1.0.0\"}}",
             BUS_EFIELD, "spec.cidr", "CIDR");
  expect_one("domain.allocated",
             "{\"domain\": \"d\", \"job\": \"j\", \"addresses\": [{\"pod\": "
             "\"p\", \"ip\": \"10.0.0.300\"}]}",
             BUS_EFIELD, "data.addresses[0].ip", "IP address");
}

Test(schema, names) {
  char n63[64], n64[65], d253[254], d254[255];
  char json[400];
  memset(n63, 'a', 63), n63[63] = 0;
  memset(n64, 'a', 64), n64[64] = 0;
  memset(d253, 'b', 253), d253[253] = 0;
  memset(d254, 'b', 254), d254[254] = 0;
  snprintf(json, sizeof json, "{\"domain\": \"%s\", \"job\": \"j\"}", n63);
  expect_ok("domain.exhausted", json);
  snprintf(json, sizeof json, "{\"domain\": \"%s\", \"job\": \"j\"}", n64);
  expect_one("domain.exhausted", json, BUS_ENAME, "data.domain", "1 to 63");
  expect_one("domain.exhausted", "{\"domain\": \"Net\", \"job\": \"j\"}",
             BUS_ENAME, "data.domain", "lowercase");
  expect_one("domain.exhausted", "{\"domain\": \"-n\", \"job\": \"j\"}",
             BUS_ENAME, "data.domain", "'-'");
  expect_one("domain.exhausted", "{\"domain\": \"\", \"job\": \"j\"}",
             BUS_ENAME, "data.domain", "name");
  expect_one("domain.exhausted", "{\"domain\": 5, \"job\": \"j\"}", BUS_ENAME,
             "data.domain", "a string");
  snprintf(json, sizeof json,
           "{\"pool\": \"p\", \"job\": \"j\", \"bindings\": [{\"pod\": "
           "\"%s\", \"task\": \"t\", \"node\": \"n\"}]}",
           d253);
  expect_ok("job.placed", json);
  snprintf(json, sizeof json,
           "{\"pool\": \"p\", \"job\": \"j\", \"bindings\": [{\"pod\": "
           "\"%s\", \"task\": \"t\", \"node\": \"n\"}]}",
           d254);
  expect_one("job.placed", json, BUS_ENAME, "data.bindings[0].pod", "1 to 253");
  expect_one("run.reported",
             "{\"kind\": \"a-very-long-kind-of-report-xyzw12\", "
             "\"values\": {}}",
             BUS_ENAME, "data.kind", "1 to 32");
}

Test(schema, string_and_item_limits) {
  char *big = malloc(5000), *json = malloc(6000);
  memset(big, 'x', 4097);
  big[4097] = 0;
  snprintf(json, 6000, "{\"text\": \"%s\"}", big);
  expect_one("sample.created", json, BUS_EFIELD, "data.text", "0 to 4096");
  big[4096] = 0;
  snprintf(json, 6000, "{\"text\": \"%s\"}", big);
  expect_ok("sample.created", json);
  memset(big, 'y', 1025);
  big[1025] = 0;
  snprintf(json, 6000, "{\"kind\": \"m\", \"values\": {\"s\": \"%s\"}}", big);
  expect_one("run.reported", json, BUS_EFIELD, "data.values.s", "1024");
  expect_one("run.reported",
             "{\"kind\": \"m\", \"values\": {\"s\": {\"nested\": 1}}}",
             BUS_EFIELD, "data.values.s", "a finite number");
  expect_one("sample.created", "{\"text\": \"a\", \"labels\": {\"\": \"v\"}}",
             BUS_EFIELD, "data.labels", "keys");
  expect_one("job.placed",
             "{\"pool\": \"p\", \"job\": \"j\", \"bindings\": [{\"pod\": "
             "\"p\", \"task\": \"t\", \"node\": \"n\", \"gpus\": [64]}]}",
             BUS_EFIELD, "data.bindings[0].gpus[0]", "from 0 to 63");
  expect_one("job.placed",
             "{\"pool\": \"p\", \"job\": \"j\", \"bindings\": [{\"pod\": "
             "\"p\", \"task\": \"t\", \"node\": \"n\", \"gpus\": [-1]}]}",
             BUS_EFIELD, "data.bindings[0].gpus[0]", "from 0 to 63");
  free(big);
  free(json);
}

Test(schema, too_many_items_is_one_problem) {
  char *json = malloc(300 * 16 + 64);
  size_t used = 0;
  int i;
  used += (size_t)sprintf(json, "{\"kind\": \"m\", \"values\": {");
  for (i = 0; i < 257; i++)
    used += (size_t)sprintf(json + used, "%s\"k%d\": %d", i ? ", " : "", i, i);
  sprintf(json + used, "}}");
  expect_one("run.reported", json, BUS_EFIELD, "data.values", "0 to 256 items");
  free(json);
}

Test(schema, utf8) {
  bus_packbuf b;
  msgpack_object o;
  static const char *const bad[] = {"\xc3", "a\xff", "\xed\xa0\x80",
                                    "\xe0\x80\x80", "a\0b"};
  static const size_t badlen[] = {1, 2, 3, 3, 3};
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bus_field_err err;
    int n;
    bus_packbuf_init(&b);
    msgpack_pack_map(&b.pk, 1);
    bus_pack_str(&b.pk, "text");
    msgpack_pack_str_with_body(&b.pk, bad[i], badlen[i]);
    cr_assert_eq(lt_unpack_into(zone, b.sb.data, b.sb.size, &o),
                 MSGPACK_UNPACK_SUCCESS);
    cr_assert_eq(bus_schema_check("sample.created", &o, &err, 1, &n),
                 BUS_EFIELD, "case %zu", i);
    cr_assert(strstr(err.reason, "UTF-8"), "case %zu: %s", i, err.reason);
    bus_packbuf_destroy(&b);
  }
  expect_ok("sample.created",
            "{\"text\": \"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"}");
}

Test(schema, collects_several) {
  bus_field_err errs[8];
  int n = 0;
  int rc =
      check("Job",
            JOB("{\"strategy\": \"x\", \"bogus\": 1, \"tasks\": [{\"name\": "
                "\"Bad\", \"role\": \"Env\", \"replicas\": 0, \"runtime\": "
                "{\"raw\": {\"entrypoint\": \"x\"}}}]}"),
            errs, 8, &n);
  cr_assert_eq(rc, BUS_EFIELD, "%s", bus_err_name(rc));
  cr_assert_eq(n, 5, "n = %d", n);
  cr_assert_str_eq(errs[0].path, "spec.strategy");
  cr_assert_str_eq(errs[1].path, "spec.bogus");
  cr_assert_str_eq(errs[2].path, "spec.tasks[0].name");
  cr_assert_str_eq(errs[3].path, "spec.tasks[0].replicas");
  cr_assert_str_eq(errs[4].path, "spec.tasks[0].runtime.raw.entrypoint");
  cr_assert(strstr(bus_last_error(), "and 4 more"), "%s", bus_last_error());

  /* max smaller than the count: n still counts every problem. */
  n = 0;
  rc = check("Job",
             JOB("{\"strategy\": \"x\", \"bogus\": 1, \"tasks\": [{\"name\": "
                 "\"Bad\", \"role\": \"Env\", \"replicas\": 0, \"runtime\": "
                 "{\"raw\": {\"entrypoint\": \"x\"}}}]}"),
             errs, 2, &n);
  cr_assert_eq(rc, BUS_EFIELD);
  cr_assert_eq(n, 5);
  n = 0;
  cr_assert_eq(check("job.phase", "{\"reason\": 1}", NULL, 0, &n), BUS_EFIELD);
  cr_assert_eq(n, 2);
}

Test(schema, first_code_wins) {
  bus_field_err errs[4];
  int n;
  int rc = check("domain.exhausted", "{\"domain\": \"Bad\"}", errs, 4, &n);
  cr_assert_eq(rc, BUS_ENAME);
  cr_assert_eq(n, 2);
  cr_assert_eq(check("domain.exhausted", "{\"free\": -1}", errs, 4, &n),
               BUS_EFIELD);
  cr_assert_eq(n, 3);
  cr_assert_str_eq(errs[1].path, "data.domain");
  cr_assert_str_eq(errs[1].reason, "is required");
}

Test(schema, floats_must_be_finite) {
  bus_packbuf b;
  msgpack_object o;
  bus_field_err err;
  int n;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "kind", "metric");
  bus_pack_str(&b.pk, "values");
  msgpack_pack_map(&b.pk, 2);
  bus_pack_str(&b.pk, "loss");
  msgpack_pack_double(&b.pk, 0.0 / 0.0);
  bus_pack_str(&b.pk, "");
  msgpack_pack_double(&b.pk, 1.0);
  cr_assert_eq(lt_unpack_into(zone, b.sb.data, b.sb.size, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(bus_schema_check("run.reported", &o, &err, 1, &n), BUS_EFIELD);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(err.path, "data.values.loss");
  cr_assert(strstr(err.reason, "finite"), "%s", err.reason);
  bus_packbuf_destroy(&b);
}

Test(schema, empty_key_in_struct) {
  expect_one("job.stopped", "{\"\": 1}", BUS_EFIELD, "data.", "unknown field");
}

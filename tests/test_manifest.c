/*
 * test_manifest.c - manifests without a broker: YAML and JSON, several
 * documents, scalar types as the schema expects them, errors that name
 * the document and line, hostile input refused without crashing, and every
 * example in examples/ valid against the schema (and each device file
 * valid to lark-edge).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "manifest.h"

static lark_manifest m;
static char err[640];
static msgpack_zone zone;

static void
setup(void) {
  memset(&m, 0, sizeof m);
  err[0] = 0;
  msgpack_zone_init(&zone, 4096);
}

static void
teardown(void) {
  lark_manifest_free(&m);
  msgpack_zone_destroy(&zone);
}

TestSuite(manifest, .init = setup, .fini = teardown, .timeout = 60);

static int
parse(const char *text) {
  lark_manifest_free(&m);
  return lark_manifest_parse(&m, "t.yaml", text, strlen(text), err, sizeof err);
}

static msgpack_object
doc_obj(size_t i) {
  msgpack_object o;
  cr_assert_lt(i, m.ndocs);
  cr_assert_eq(msgpack_unpack(m.docs[i].mp, m.docs[i].mp_len, NULL, &zone, &o),
               MSGPACK_UNPACK_SUCCESS);
  return o;
}

static const msgpack_object *
field(const msgpack_object *o, const char *key) {
  const msgpack_object *v = bus_obj_get(o, key);
  cr_assert_not_null(v, "no field %s", key);
  return v;
}

static int
is_str(const msgpack_object *v, const char *s) {
  return v->type == MSGPACK_OBJECT_STR && v->via.str.size == strlen(s) &&
         !memcmp(v->via.str.ptr, s, strlen(s));
}

Test(manifest, yaml_scalars_take_core_schema_types) {
  cr_assert_eq(parse("i: 42\n"
                     "neg: -7\n"
                     "hex: 0x1F\n"
                     "oct: 0o17\n"
                     "f: 2.5\n"
                     "e: 1e3\n"
                     "t: true\n"
                     "F: False\n"
                     "n: null\n"
                     "tilde: ~\n"
                     "empty:\n"
                     "q: \"8\"\n"
                     "sq: 'true'\n"
                     "yes: yes\n"
                     "ver: 1.0.2\n"
                     "tagged: !!str 5\n"
                     "tint: !!int \"6\"\n"
                     "tfloat: !!float 3\n"
                     "block: |\n  two\n  lines\n"
                     "7: seven\n"),
               0, "%s", err);
  msgpack_object o = doc_obj(0);
  cr_expect_eq(field(&o, "i")->type, MSGPACK_OBJECT_POSITIVE_INTEGER);
  cr_expect_eq(field(&o, "i")->via.u64, 42);
  cr_expect_eq(field(&o, "neg")->type, MSGPACK_OBJECT_NEGATIVE_INTEGER);
  cr_expect_eq(field(&o, "neg")->via.i64, -7);
  cr_expect_eq(field(&o, "hex")->via.u64, 31);
  cr_expect_eq(field(&o, "oct")->via.u64, 15);
  cr_expect_eq(field(&o, "f")->type, MSGPACK_OBJECT_FLOAT64);
  cr_expect_eq(field(&o, "f")->via.f64, 2.5);
  cr_expect_eq(field(&o, "e")->via.f64, 1000.0);
  cr_expect_eq(field(&o, "t")->type, MSGPACK_OBJECT_BOOLEAN);
  cr_expect(field(&o, "t")->via.boolean);
  cr_expect(!field(&o, "F")->via.boolean);
  cr_expect_eq(field(&o, "n")->type, MSGPACK_OBJECT_NIL);
  cr_expect_eq(field(&o, "tilde")->type, MSGPACK_OBJECT_NIL);
  cr_expect_eq(field(&o, "empty")->type, MSGPACK_OBJECT_NIL);
  cr_expect(is_str(field(&o, "q"), "8"));
  cr_expect(is_str(field(&o, "sq"), "true"));
  cr_expect(is_str(field(&o, "yes"), "yes"));
  cr_expect(is_str(field(&o, "ver"), "1.0.2"));
  cr_expect(is_str(field(&o, "tagged"), "5"));
  cr_expect_eq(field(&o, "tint")->via.u64, 6);
  cr_expect_eq(field(&o, "tfloat")->type, MSGPACK_OBJECT_FLOAT64);
  cr_expect(is_str(field(&o, "block"), "two\nlines\n"));
  cr_expect(is_str(field(&o, "7"), "seven"), "keys stay strings");
}

Test(manifest, yaml_several_documents_with_indexes_and_lines) {
  cr_assert_eq(parse("# a comment\n"
                     "kind: Job\n"
                     "metadata: {name: a}\n"
                     "---\n"
                     "# nothing here\n"
                     "---\n"
                     "kind: Node\n"
                     "metadata:\n"
                     "  name: b\n"
                     "...\n"
                     "---\n"
                     "- {kind: Domain, metadata: {name: c}}\n"
                     "- {kind: Domain, metadata: {name: d}}\n"),
               0, "%s", err);
  cr_assert_eq(m.ndocs, 4);
  cr_expect_str_eq(m.docs[0].kind, "Job");
  cr_expect_str_eq(m.docs[0].name, "a");
  cr_expect_eq(m.docs[0].index, 1);
  cr_expect_eq(m.docs[0].line, 2);
  cr_expect_str_eq(m.docs[1].name, "b");
  cr_expect_eq(m.docs[1].index, 3, "the empty document still counts");
  cr_expect_eq(m.docs[1].line, 7);
  cr_expect_str_eq(m.docs[2].name, "c");
  cr_expect_str_eq(m.docs[3].name, "d");
  cr_expect_eq(m.docs[3].line, 13);
}

Test(manifest, json_object_array_and_stream) {
  cr_assert_eq(parse("{\"kind\": \"Job\", \"metadata\": {\"name\": \"a\"},\n"
                     " \"spec\": {\"n\": 3, \"f\": 0.5, \"b\": true, "
                     "\"z\": null, \"s\": \"8\", \"neg\": -2}}\n"),
               0, "%s", err);
  cr_assert_eq(m.ndocs, 1);
  msgpack_object o = doc_obj(0);
  const msgpack_object *spec = field(&o, "spec");
  cr_expect_eq(field(spec, "n")->type, MSGPACK_OBJECT_POSITIVE_INTEGER);
  cr_expect_eq(field(spec, "f")->type, MSGPACK_OBJECT_FLOAT64);
  cr_expect_eq(field(spec, "b")->type, MSGPACK_OBJECT_BOOLEAN);
  cr_expect_eq(field(spec, "z")->type, MSGPACK_OBJECT_NIL);
  cr_expect(is_str(field(spec, "s"), "8"));
  cr_expect_eq(field(spec, "neg")->via.i64, -2);

  cr_assert_eq(parse("[{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}},\n"
                     " {\"kind\": \"Node\", \"metadata\": {\"name\": \"b\"}}]"),
               0, "%s", err);
  cr_assert_eq(m.ndocs, 2);
  cr_expect_eq(m.docs[1].index, 2);
  cr_expect_str_eq(m.docs[1].name, "b");

  cr_assert_eq(parse("{\"kind\": \"Job\", \"metadata\": {\"name\": \"a\"}}\n"
                     "\n"
                     "{\"kind\": \"Job\", \"metadata\": {\"name\": \"b\"}}\n"),
               0, "%s", err);
  cr_assert_eq(m.ndocs, 2);
  cr_expect_eq(m.docs[1].index, 2);
  cr_expect_eq(m.docs[1].line, 3);
}

Test(manifest, errors_name_file_document_and_line) {
  cr_expect_eq(parse("kind: Job\n---\nkind: Job\nspec:\n  a: [1, 2\n  b: 3\n"),
               BUS_EMALFORMED);
  cr_expect(strstr(err, "t.yaml doc 2 line"), "%s", err);
  cr_expect_eq(m.ndocs, 0);

  cr_expect_eq(parse("kind: Job\nspec:\n  a: 1\n  a: 2\n"), BUS_EMALFORMED);
  cr_expect(strstr(err, "doc 1 line 4") && strstr(err, "duplicate key 'a'"),
            "%s", err);

  cr_expect_eq(parse("kind: Job\n---\n- 1\n- 2\n"), BUS_EMALFORMED);
  cr_expect(strstr(err, "doc 2 line 3") && strstr(err, "mapping"), "%s", err);

  cr_expect_eq(parse("n: 99999999999999999999999\n"), BUS_EMALFORMED);
  cr_expect(strstr(err, "64 bits"), "%s", err);

  cr_expect_eq(parse("n: !custom 1\n"), BUS_EMALFORMED);
  cr_expect(strstr(err, "tag !custom"), "%s", err);

  cr_expect_eq(parse("? [a]\n: b\n"), BUS_EMALFORMED);
  cr_expect(strstr(err, "key must be a scalar"), "%s", err);

  cr_expect_eq(parse("{\"a\": 1,\n \"a\": 2}"), BUS_EMALFORMED);
  cr_expect(strstr(err, "doc 1 line 2"), "%s", err);

  cr_expect_eq(parse("{\"a\": 1}\n{\"b\": \n"), BUS_EMALFORMED);
  cr_expect(strstr(err, "doc 2 line"), "%s", err);
}

Test(manifest, aliases_and_anchors_are_refused) {
  const char *laughs = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n";
  cr_expect_eq(parse(laughs), BUS_EMALFORMED);
  cr_expect(strstr(err, "anchors (&a)"), "%s", err);
  cr_expect_eq(parse("a: *nowhere\n"), BUS_EMALFORMED);
  cr_expect_eq(m.ndocs, 0);
}

static char *
repeat(const char *open, const char *close, int n) {
  size_t lo = strlen(open), lc = strlen(close);
  char *s = malloc((lo + lc) * (size_t)n + 1), *p = s;
  for (int i = 0; i < n; i++, p += lo)
    memcpy(p, open, lo);
  for (int i = 0; i < n; i++, p += lc)
    memcpy(p, close, lc);
  *p = 0;
  return s;
}

Test(manifest, deep_nesting_is_refused_not_crashed) {
  char *deep = repeat("[", "]", 100000);
  char *s = malloc(strlen(deep) + 4);
  sprintf(s, "x: %s", deep);
  cr_expect_eq(parse(s), BUS_ETOO_BIG);
  cr_expect(strstr(err, "nested deeper"), "%s", err);
  cr_expect_neq(parse(deep), 0, "JSON too");
  free(s);
  free(deep);
  /* the top mapping and MAX_DEPTH - 1 more are at the limit; one more is
   * over */
  for (int extra = 0; extra < 2; extra++) {
    deep = repeat("{a: ", "}", LARK_MANIFEST_MAX_DEPTH - 1 + extra);
    s = malloc(strlen(deep) + 4);
    sprintf(s, "x: %s", deep);
    cr_expect_eq(parse(s), extra ? BUS_ETOO_BIG : 0, "%s", err);
    free(s);
    free(deep);
  }
}

Test(manifest, size_and_count_limits) {
  size_t n = LARK_MANIFEST_MAX_BYTES + 1;
  char *big = malloc(n);
  memset(big, ' ', n);
  cr_expect_eq(lark_manifest_parse(&m, "big.yaml", big, n, err, sizeof err),
               BUS_ETOO_BIG);
  free(big);

  /* more keys in one mapping than allowed */
  size_t cap = (size_t)(LARK_MANIFEST_MAX_KEYS + 10) * 16;
  char *keys = malloc(cap), *p = keys;
  for (int i = 0; i < LARK_MANIFEST_MAX_KEYS + 10; i++)
    p += sprintf(p, "k%d: %d\n", i, i);
  cr_expect_eq(parse(keys), BUS_ETOO_BIG, "%s", err);
  free(keys);

  /* too many documents */
  char *docs = repeat("---\na: 1\n", "", LARK_MANIFEST_MAX_DOCS + 1);
  cr_expect_eq(parse(docs), BUS_ETOO_BIG, "%s", err);
  free(docs);
}

/* A small deterministic generator: the same hostile bytes every run. */
static uint32_t
lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

Test(manifest, random_and_mutated_input_never_crashes) {
  static const char seed[] = "apiVersion: rlinf.io/v1alpha1\nkind: Job\n"
                             "metadata: {name: a}\nspec:\n  tasks:\n"
                             "    - name: t\n      role: Actor\n"
                             "      runtime: {raw: {entrypoint: [\"x\"]}}\n";
  static const char alphabet[] = "{}[]:,-#&*!|>'\"\n \t?%@`0a.\\";
  uint32_t s = 12345;
  char buf[sizeof seed];
  for (int round = 0; round < 4000; round++) {
    memcpy(buf, seed, sizeof seed);
    int edits = 1 + (int)(lcg(&s) % 8);
    for (int e = 0; e < edits; e++) {
      size_t at = lcg(&s) % (sizeof seed - 1);
      buf[at] = round % 3 ? alphabet[lcg(&s) % (sizeof alphabet - 1)]
                          : (char)(lcg(&s) & 0xff);
    }
    size_t len = lcg(&s) % sizeof seed;
    lark_manifest_free(&m);
    if (lark_manifest_parse(&m, "r.yaml", buf, len, err, sizeof err) == 0)
      for (size_t i = 0; i < m.ndocs; i++) {
        bus_field_err errs[4];
        int n = 0;
        lark_doc_check(&m.docs[i], errs, 4, &n);
        for (int k = 0; k < n && k < 4; k++)
          cr_assert_geq(lark_doc_line(&m.docs[i], errs[k].path), 1);
      }
    else
      cr_assert_eq(m.ndocs, 0);
  }
}

Test(manifest, schema_errors_map_to_lines) {
  cr_assert_eq(parse("apiVersion: rlinf.io/v1alpha1\n"
                     "kind: Job\n"
                     "metadata:\n"
                     "  name: train-1\n"
                     "spec:\n"
                     "  tasks:\n"
                     "    - name: a\n"
                     "      role: Actor\n"
                     "      replicas: 0\n"
                     "      resources:\n"
                     "        devices:\n"
                     "          rlinf.io/device: -1\n"
                     "      runtime: {raw: {entrypoint: [\"x\"]}}\n"),
               0, "%s", err);
  bus_field_err errs[8];
  int n = 0;
  cr_expect_neq(lark_doc_check(&m.docs[0], errs, 8, &n), 0);
  cr_assert_eq(n, 2);
  cr_expect_str_eq(errs[0].path, "spec.tasks[0].replicas");
  cr_expect_eq(lark_doc_line(&m.docs[0], errs[0].path), 9);
  cr_expect_str_eq(errs[1].path,
                   "spec.tasks[0].resources.devices.rlinf.io/device");
  cr_expect_eq(lark_doc_line(&m.docs[0], errs[1].path), 12);
  cr_expect_eq(lark_doc_line(&m.docs[0], "spec.tasks[0].missing"), 7,
               "a missing field: its parent's line");

  cr_assert_eq(
      parse("apiVersion: rlinf.io/v1\nkind: job\nmetadata: {name: a}\n"), 0);
  cr_expect_neq(lark_doc_check(&m.docs[0], errs, 8, &n), 0);
  cr_expect_str_eq(errs[0].path, "kind");
  cr_expect_eq(lark_doc_line(&m.docs[0], "kind"), 2);
}

Test(manifest, kinds_by_any_name) {
  cr_expect_str_eq(lark_kind_find("Job")->cmd, "job");
  cr_expect_str_eq(lark_kind_find("jobs")->cmd, "job");
  cr_expect_str_eq(lark_kind_find("wf")->cmd, "workflow");
  cr_expect_str_eq(lark_kind_find("Workflow")->service, "lark-dag");
  cr_expect_str_eq(lark_kind_find("node")->service, "lark-scheduler");
  cr_expect_null(lark_kind_find("pod"));
}

static int
is_manifest(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml") ||
                 !strcmp(dot, ".json"));
}

/* A node's device file (`lark-edge --device-file`), not a manifest. */
static int
is_device_file(const char *name) {
  return strstr(name, "-devices.yaml") != NULL;
}

/* An example device file: lark-edge's own parser takes it. */
static void
check_device_file(const char *path) {
  edge_devices d = {0};
  cr_expect_eq(edge_devices_load(path, &d, err, sizeof err), 0, "%s", err);
  cr_expect_gt(d.n, 0, "%s declares no device", path);
  edge_devices_free(&d);
}

Test(manifest, every_example_is_valid) {
  const char *src = getenv("LARK_SOURCE_DIR");
  cr_assert_not_null(src, "LARK_SOURCE_DIR is set by ctest");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/examples", src);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s", dir);
  int files = 0, wf = 0, devfiles = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!is_manifest(e->d_name))
      continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (is_device_file(e->d_name)) {
      check_device_file(path);
      devfiles++;
      continue;
    }
    lark_manifest_free(&m);
    cr_assert_eq(lark_manifest_load(&m, path, err, sizeof err), 0, "%s", err);
    cr_expect_gt(m.ndocs, 0, "%s has no resources", path);
    for (size_t i = 0; i < m.ndocs; i++) {
      bus_field_err errs[8];
      int n = 0;
      int rc = lark_doc_check(&m.docs[i], errs, 8, &n);
      cr_expect_eq(rc, 0, "%s doc %d: %s: %s", path, m.docs[i].index,
                   n ? errs[0].path : "", n ? errs[0].reason : "");
      wf +=
          !strcmp(m.docs[i].kind, "Workflow") && !strcmp(m.docs[i].name, "rl");
    }
    files++;
  }
  closedir(d);
  cr_expect_geq(files, 3, "rl-workflow.yaml, job.yaml, nodes.yaml");
  cr_expect_eq(wf, 1, "the rl Workflow is among the examples");
  cr_expect_geq(devfiles, 1, "embodied-devices.yaml is among the examples");
}

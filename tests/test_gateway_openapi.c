/*
 * test_gateway_openapi.c - services/gateway/www/openapi.json, the OpenAPI
 * document lark-gateway serves at /openapi.json: it is OpenAPI 3.0 JSON,
 * every operation has responses, every path the router names in
 * services/gateway/http*.c (each "/..." string it compares a path with)
 * is a documented path or the prefix of one, and the {kind} of the
 * collection routes lists exactly the kinds the gateway serves.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "files.h"
#include "gateway.h"

static json_t *
load_doc(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/services/gateway/www/openapi.json",
           lt_source_dir());
  json_error_t err;
  json_t *doc = json_load_file(path, 0, &err);
  cr_assert_not_null(doc, "%s: line %d: %s", path, err.line, err.text);
  return doc;
}

/* 1 when some documented path equals route or starts with it. */
static int
documented(json_t *paths, const char *route) {
  const char *p;
  json_t *v;
  json_object_foreach(paths, p,
                      v) if (!strncmp(p, route, strlen(route))) return 1;
  return 0;
}

/* Each "/<letter>..." literal of the router's files. */
static void
check_routes(json_t *paths, const char *file, size_t *seen) {
  static char text[1 << 20];
  cr_assert(lt_read_file(file, text, sizeof text), "%s", file);
  for (const char *q = strstr(text, "\"/"); q; q = strstr(q + 1, "\"/")) {
    const char *end = strchr(q + 1, '"');
    char lit[256];
    size_t n = end ? (size_t)(end - q - 1) : 0;
    if (!n || n >= sizeof lit || !((q[2] >= 'a' && q[2] <= 'z')))
      continue;
    memcpy(lit, q + 1, n);
    lit[n] = 0;
    if (!strcmp(lit, "/index.html") || !strncmp(lit, "/proc/", 6))
      continue; /* a static file; a path of this machine */
    cr_expect(documented(paths, lit), "%s: %s is not in openapi.json", file,
              lit);
    (*seen)++;
  }
}

Test(gateway_openapi, documents_every_route) {
  json_t *doc = load_doc();
  const char *v = json_string_value(json_object_get(doc, "openapi"));
  cr_assert(v && !strncmp(v, "3.0.", 4), "openapi: %s", v ? v : "none");
  json_t *paths = json_object_get(doc, "paths");
  cr_assert_gt(json_object_size(paths), 10);
  const char *p, *m;
  json_t *item, *op;
  json_object_foreach(paths, p, item) {
    cr_assert_eq(p[0], '/', "%s", p);
    json_object_foreach(item, m, op)
        cr_assert(json_object_size(json_object_get(op, "responses")) > 0,
                  "%s %s has no responses", m, p);
  }
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/services/gateway", lt_source_dir());
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "%s", dir);
  size_t seen = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "http", 4) || n < 3 ||
        strcmp(e->d_name + n - 2, ".c"))
      continue;
    char file[2048];
    snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
    check_routes(paths, file, &seen);
  }
  closedir(d);
  cr_assert_geq(seen, 6, "too few routes found in the router: %zu", seen);

  json_t *params = json_object_get(
      json_object_get(
          json_object_get(paths, "/api/v1/rlinf.io/v1alpha1/{kind}"), "get"),
      "parameters");
  json_t *kinds = NULL, *prm;
  size_t i;
  json_array_foreach(
      params, i,
      prm) if (!strcmp(json_string_value(json_object_get(prm, "name")), "kind"))
      kinds = json_object_get(json_object_get(prm, "schema"), "enum");
  cr_assert_eq(json_array_size(kinds), GW_NKINDS);
  for (int k = 0; k < GW_NKINDS; k++)
    cr_assert_str_eq(json_string_value(json_array_get(kinds, (size_t)k)),
                     gw_kind_plural((gw_kind)k));
  json_decref(doc);
}

/*
 * kinds.c - which service answers for each kind, and its columns.
 *
 * Rows are added by the services that own kinds; anything not listed is
 * read from the catalog, which knows every aggregate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds.h"

static const cli_col catalog_cols[] = {
    {"KIND", "kind", COL_STR, 10},      {"NAME", "id", COL_STR, 28},
    {"VERSION", "version", COL_INT, 8}, {"GEN", "generation", COL_INT, 4},
    {"EVENTS", "events", COL_INT, 7},   {"LAST", "type", COL_STR, 22},
    {"AGE", "ts", COL_AGE, 6},          {NULL, NULL, 0, 0}};
static const cli_col catalog_wide[] = {{"ACTOR", "actor", COL_STR, 16},
                                       {"TIME", "ts", COL_TIME, 24},
                                       {NULL, NULL, 0, 0}};

const cli_kind cli_catalog_kind = {"catalog",    "catalog",    NULL, "catalog",
                                   catalog_cols, catalog_wide, NULL};

/* `larkctl cert list`: the signer's certificates. */
static const cli_col cert_cols[] = {{"SERIAL", "serial", COL_STR, 33},
                                    {"FORMAT", "format", COL_STR, 6},
                                    {"ROLE", "role", COL_STR, 10},
                                    {"NAME", "name", COL_STR, 20},
                                    {"NOT AFTER", "notAfter", COL_TIME, 24},
                                    {"REVOKED", "revoked", COL_BOOL, 7},
                                    {NULL, NULL, 0, 0}};
static const cli_col cert_wide[] = {{"SUBJECT", "subject", COL_STR, 40},
                                    {"FINGERPRINT", "fingerprint", COL_STR, 52},
                                    {NULL, NULL, 0, 0}};
const cli_kind cli_cert_kind = {"cert",    "certs",   NULL, "signer",
                                cert_cols, cert_wide, NULL};

static const cli_col workflow_cols[] = {{"NAME", "name", COL_STR, 28},
                                        {"PHASE", "phase", COL_STR, 10},
                                        {"JOBS", "progress", COL_STR, 6},
                                        {"AGE", "ts", COL_AGE, 6},
                                        {NULL, NULL, 0, 0}};
static const cli_col workflow_wide[] = {{"GEN", "generation", COL_INT, 4},
                                        {"REASON", "reason", COL_STR, 40},
                                        {NULL, NULL, 0, 0}};

static const cli_col job_cols[] = {
    {"NAME", "name", COL_STR, 24},    {"PHASE", "phase", COL_STR, 10},
    {"PODS", "pods", COL_STR, 8},     {"AGE", "ts", COL_AGE, 6},
    {"REASON", "reason", COL_STR, 0}, {NULL, NULL, 0, 0}};
static const cli_col job_wide[] = {{"GEN", "generation", COL_INT, 4},
                                   {"DOMAIN", "domain", COL_STR, 12},
                                   {NULL, NULL, 0, 0}};
static const cli_col task_cols[] = {
    {"NAME", "name", COL_STR, 28},        {"JOB", "job", COL_STR, 20},
    {"PHASE", "phase", COL_STR, 10},      {"ROLE", "role", COL_STR, 8},
    {"REPLICAS", "replicas", COL_INT, 8}, {NULL, NULL, 0, 0}};
static const cli_col task_wide[] = {
    {"RAY-ROLE", "annotations.ray-role", COL_STR, 8},
    {"RANK-START", "annotations.ray-node-rank-start", COL_STR, 10},
    {"TOTAL", "annotations.ray-total-nodes", COL_STR, 5},
    {NULL, NULL, 0, 0}};
static const cli_col pod_cols[] = {
    {"NAME", "name", COL_STR, 30},    {"PHASE", "phase", COL_STR, 10},
    {"NODE", "node", COL_STR, 14},    {"ATTEMPT", "attempt", COL_INT, 7},
    {"REASON", "reason", COL_STR, 0}, {NULL, NULL, 0, 0}};
static const cli_col pod_wide[] = {{"GPUS", "gpus", COL_JSON, 10},
                                   {"IP", "localIP", COL_STR, 15},
                                   {"VIRTUAL-IP", "virtualIP", COL_STR, 15},
                                   {"DESIRED", "desired", COL_STR, 8},
                                   {NULL, NULL, 0, 0}};
static const cli_col node_cols[] = {
    {"NAME", "name", COL_STR, 16},        {"STATUS", "status", COL_STR, 9},
    {"CLUSTER", "cluster", COL_STR, 10},  {"PODS", "pods", COL_INT, 5},
    {"CORDONED", "cordoned", COL_STR, 8}, {NULL, NULL, 0, 0}};
static const cli_col node_wide[] = {{"CPU", "cpuUsed", COL_STR, 8},
                                    {"MEMORY", "memoryUsed", COL_STR, 10},
                                    {"GPUS", "gpusUsed", COL_JSON, 10},
                                    {NULL, NULL, 0, 0}};

static const cli_col domain_cols[] = {{"NAME", "name", COL_STR, 20},
                                      {"CIDR", "cidr", COL_STR, 20},
                                      {"USED", "used", COL_INT, 8},
                                      {"FREE", "free", COL_INT, 10},
                                      {"WAITING", "waiting", COL_INT, 7},
                                      {"AGE", "ts", COL_AGE, 6},
                                      {NULL, NULL, 0, 0}};
static const cli_col domain_wide[] = {{"FAMILY", "family", COL_STR, 6},
                                      {"CAPACITY", "capacity", COL_INT, 12},
                                      {"ACTOR", "actor", COL_STR, 16},
                                      {NULL, NULL, 0, 0}};
static const cli_col domainpeer_cols[] = {{"NAME", "name", COL_STR, 28},
                                          {"DOMAIN", "domain", COL_STR, 16},
                                          {"CLUSTER", "cluster", COL_STR, 12},
                                          {"PODS", "pods", COL_INT, 5},
                                          {"LOCAL", "local", COL_INT, 5},
                                          {"HUB", "hub", COL_INT, 5},
                                          {NULL, NULL, 0, 0}};
static const cli_col route_cols[] = {{"CLUSTER", "cluster", COL_STR, 12},
                                     {"POD", "pod", COL_STR, 28},
                                     {"IP", "ip", COL_STR, 16},
                                     {"REAL-IP", "realIP", COL_STR, 16},
                                     {"NODE", "node", COL_STR, 14},
                                     {"VIA", "via", COL_STR, 5},
                                     {NULL, NULL, 0, 0}};
static const cli_col route_wide[] = {{"DOMAIN", "domain", COL_STR, 16},
                                     {"POD-CLUSTER", "podCluster", COL_STR, 12},
                                     {NULL, NULL, 0, 0}};

static const cli_col device_cols[] = {{"NODE", "node", COL_STR, 14},
                                      {"NAME", "name", COL_STR, 16},
                                      {"KIND", "kind", COL_STR, 6},
                                      {"STATE", "state", COL_STR, 10},
                                      {"MODE", "mode", COL_STR, 10},
                                      {"HOLDER", "holder", COL_STR, 16},
                                      {NULL, NULL, 0, 0}};
static const cli_col device_wide[] = {{"DESIRED", "desired", COL_STR, 8},
                                      {"RESTARTS", "restarts", COL_INT, 8},
                                      {"FRAMES", "frames", COL_INT, 8},
                                      {"AGE", "ts", COL_AGE, 6},
                                      {NULL, NULL, 0, 0}};

/* Kinds owned by services: one row each. */
static const cli_kind kinds[] = {
    {"workflow", "workflows", "wf", "dag", workflow_cols, workflow_wide, NULL},
    {"job", "jobs", NULL, "scheduler", job_cols, job_wide, NULL},
    {"task", "tasks", NULL, "scheduler", task_cols, task_wide, NULL},
    {"pod", "pods", "po", "scheduler", pod_cols, pod_wide, NULL},
    {"node", "nodes", "no", "scheduler", node_cols, node_wide, NULL},
    {"domain", "domains", "dom", "ipam", domain_cols, domain_wide, NULL},
    {"domainpeer", "domainpeers", "dp", "ipam", domainpeer_cols, NULL, NULL},
    {"route", "routes", NULL, "ipam", route_cols, route_wide, NULL},
    {"device", "devices", "dev", "devices", device_cols, device_wide, "id"},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const cli_kind *
cli_kind_at(size_t i) {
  return i < sizeof kinds / sizeof kinds[0] - 1 ? &kinds[i] : NULL;
}

const cli_kind *
cli_kind_find(const char *name) {
  for (const cli_kind *k = kinds; k->kind; k++)
    if (!strcmp(name, k->kind) || !strcmp(name, k->plural) ||
        (k->shortname && !strcmp(name, k->shortname)))
      return k;
  return NULL;
}

/* Reach "a.b" inside nested maps. */
static const msgpack_object *
get_path(const msgpack_object *o, const char *path) {
  char key[128];
  const char *dot;
  while (o && (dot = strchr(path, '.'))) {
    size_t n = (size_t)(dot - path) < sizeof key - 1 ? (size_t)(dot - path)
                                                     : sizeof key - 1;
    memcpy(key, path, n);
    key[n] = 0;
    o = bus_obj_get(o, key);
    path = dot + 1;
  }
  return o ? bus_obj_get(o, path) : NULL;
}

static void
cell(const msgpack_object *item, const cli_col *c) {
  const msgpack_object *v = get_path(item, c->key);
  char buf[512] = "-";
  if (v && v->type != MSGPACK_OBJECT_NIL) {
    int64_t n = v->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)v->via.u64
                : v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? v->via.i64
                                                             : 0;
    if (c->fmt == COL_AGE)
      cli_age(n, buf, sizeof buf);
    else if (c->fmt == COL_TIME)
      cli_format_time(n, buf, sizeof buf);
    else if (v->type == MSGPACK_OBJECT_STR)
      snprintf(buf, sizeof buf, "%.*s", (int)v->via.str.size, v->via.str.ptr);
    else {
      char *j = cli_obj_to_json(v);
      snprintf(buf, sizeof buf, "%s", j ? j : "-");
      free(j);
    }
  }
  printf("%-*s ", c->width, buf[0] ? buf : "-");
}

static void
header(const cli_col *cols) {
  for (const cli_col *c = cols; c && c->header; c++)
    printf("%-*s ", c->width, c->header);
}

/* -o name: kind/name, kubectl's form; the catalog's rows name their
 * own kind, a route its pod. */
void
cli_print_name(const msgpack_object *it, const cli_kind *k) {
  char kind[128], name[512];
  if (k != &cli_catalog_kind || !bus_obj_str(it, "kind", kind, sizeof kind))
    snprintf(kind, sizeof kind, "%s", k->kind);
  if ((k->name_key && bus_obj_str(it, k->name_key, name, sizeof name)) ||
      bus_obj_str(it, "name", name, sizeof name) ||
      bus_obj_str(it, "id", name, sizeof name) ||
      bus_obj_str(it, "pod", name, sizeof name))
    printf("%s/%s\n", kind, name);
}

static void
print_names(const msgpack_object *items, const cli_kind *k) {
  for (uint32_t i = 0;
       items->type == MSGPACK_OBJECT_ARRAY && i < items->via.array.size; i++)
    cli_print_name(&items->via.array.ptr[i], k);
}

const msgpack_object *
cli_list_items(const msgpack_object *result) {
  const msgpack_object *items = bus_obj_get(result, "items");
  return items ? items : result;
}

void
cli_print_table(const msgpack_object *items, const cli_kind *k, int output) {
  if (output == CLI_OUT_JSON || output == CLI_OUT_YAML) {
    json_t *j = cli_obj_json(items);
    cli_print_doc(j, output);
    json_decref(j);
    return;
  }
  if (output == CLI_OUT_NAME) {
    print_names(items, k);
    return;
  }
  int wide = output == CLI_OUT_WIDE;
  header(k->cols);
  if (wide)
    header(k->wide);
  putchar('\n');
  if (items->type != MSGPACK_OBJECT_ARRAY)
    return;
  for (uint32_t i = 0; i < items->via.array.size; i++) {
    cli_print_row(&items->via.array.ptr[i], k, wide);
    putchar('\n');
  }
}

void
cli_print_row(const msgpack_object *item, const cli_kind *k, int wide) {
  for (const cli_col *c = k->cols; c->header; c++)
    cell(item, c);
  for (const cli_col *c = wide ? k->wide : NULL; c && c->header; c++)
    cell(item, c);
}

const char *
cli_kind_singular(const char *kind, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", kind);
  size_t n = strlen(buf);
  if (n > 3 && buf[n - 1] == 's')
    buf[n - 1] = 0;
  return buf;
}

/*
 * view_rows.c - what every part of the gateway's view shares: the kinds
 * and their names, an object's key, the meta counters, a stored object's
 * record and its filter, and the list options. It calls nothing else of
 * the view, so view.c (apply) sits on top of the files it runs and
 * nothing calls back up.
 */
#include <string.h>

#include "view-int.h"

static const char *const plurals[GW_NKINDS] = {"nodes", "workflows", "jobs",
                                               "tasks", "pods",      "domains"};
static const char *const kinds[GW_NKINDS] = {"Node", "Workflow", "Job",
                                             "Task", "Pod",      "Domain"};

int
gw_kind_parse(const char *plural) {
  for (int k = 0; plural && k < GW_NKINDS; k++)
    if (!strcmp(plural, plurals[k]))
      return k;
  return -1;
}

const char *
gw_kind_plural(gw_kind k) {
  return (unsigned)k < GW_NKINDS ? plurals[k] : "";
}

const char *
gw_kind_name(gw_kind k) {
  return (unsigned)k < GW_NKINDS ? kinds[k] : "";
}

size_t
gw_obj_key(char *key, size_t cap, gw_kind k, const char *name) {
  int n = snprintf(key, cap, "%s/%s", gw_kind_plural(k), name);
  return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

uint64_t
gw_meta_u64(bus_txn *t, const char *k) {
  const void *v;
  size_t n;
  if (bus_txn_get(t, "meta", k, strlen(k), &v, &n) || n != 8)
    return 0;
  return bus_get_be64(v);
}

int
gw_meta_put_u64(bus_txn *t, const char *k, uint64_t v) {
  unsigned char b[8];
  bus_put_be64(b, v);
  return bus_txn_put(t, "meta", k, strlen(k), b, 8);
}

int
gw_rec_parse(const void *val, size_t vlen, gw_rec *r) {
  const char *p = val, *end = p + vlen;
  if (vlen < 11)
    return BUS_ECORRUPT;
  r->rv = bus_get_be64(val);
  p += 8;
  const char **f[3] = {&r->job, &r->node, &r->wf};
  for (int i = 0; i < 3; i++) {
    const char *z = memchr(p, 0, (size_t)(end - p));
    if (!z)
      return BUS_ECORRUPT;
    *f[i] = p;
    p = z + 1;
  }
  r->json = p;
  r->len = (size_t)(end - p);
  return 0;
}

int
gw_rec_matches(const gw_rec *r, const gw_list_opts *o) {
  return (!o->job || !strcmp(o->job, r->job)) &&
         (!o->node || !strcmp(o->node, r->node)) &&
         (!o->workflow || !strcmp(o->workflow, r->wf));
}

/* times: be64(ts)be64(seq), ts never below the last one. */
void
gw_list_opts_init(gw_list_opts *o) {
  memset(o, 0, sizeof *o);
}

/*
 * view_render.c - an object rendered again and, when its JSON changed,
 * written: to objects (now), history (at this sequence) and changes (a
 * watch's line), with the index its filters use.
 *
 * The fields come from the owner's query on the embedded view, as
 * `larkctl get`/`describe` shows them: pods, tasks, nodes and Workflows
 * described; Jobs and Domains as their list row (a Job's describe lists
 * all its pods: rendering it for each pod's event would cost the whole
 * Job). Pods gain virtualIP from ipam, Jobs and Workflows their spec.
 * An object its owner no longer has (or a pod desired Deleted) is
 * DELETED, its last JSON kept as the change's object.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"
#include "ipam.h"
#include "json.h"
#include "scheduler.h"
#include "view-int.h"

/* What a render gives: the fields (NULL: gone) and the filters' values. */
typedef struct rendered {
  json_t *fields;
  char job[GW_NAME_SZ], node[GW_NAME_SZ], wf[GW_NAME_SZ];
} rendered;

/* q(kind, verb, {name}) on t, its result unpacked as jansson (NULL: none). */
static json_t *
ask(bus_query_fn q, bus_txn *t, const char *kind, const char *verb,
    const char *name) {
  bus_packbuf req, out;
  msgpack_unpacked u, r;
  json_t *j = NULL;
  bus_packbuf_init(&req);
  bus_packbuf_init(&out);
  msgpack_unpacked_init(&u);
  msgpack_unpacked_init(&r);
  msgpack_pack_map(&req.pk, 1);
  bus_pack_kv_str(&req.pk, "name", name);
  if (msgpack_unpack_next(&u, req.sb.data, req.sb.size, NULL) ==
          MSGPACK_UNPACK_SUCCESS &&
      q(t, kind, verb, &u.data, &out.pk, NULL) == 0 &&
      msgpack_unpack_next(&r, out.sb.data, out.sb.size, NULL) ==
          MSGPACK_UNPACK_SUCCESS)
    j = cli_obj_json(&r.data);
  msgpack_unpacked_destroy(&u);
  msgpack_unpacked_destroy(&r);
  bus_packbuf_destroy(&req);
  bus_packbuf_destroy(&out);
  return j;
}

/* The row of a list that is name's (lists by name may hold others). */
static json_t *
row_of(json_t *list, const char *name) {
  json_t *row = NULL, *it;
  size_t i;
  json_array_foreach(list, i, it) {
    const char *n = json_string_value(json_object_get(it, "name"));
    if (n && !strcmp(n, name) && !row)
      row = json_incref(it);
  }
  json_decref(list);
  return row;
}

static const char *
str_of(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* A stored resource (msgpack) as the object's "spec". */
static void
add_spec(json_t *fields, bus_txn *t, const char *table, const char *name) {
  const void *v;
  size_t n;
  msgpack_unpacked u;
  if (!fields || bus_txn_get(t, table, name, strlen(name), &v, &n))
    return;
  msgpack_unpacked_init(&u);
  if (msgpack_unpack_next(&u, v, n, NULL) == MSGPACK_UNPACK_SUCCESS) {
    const msgpack_object *spec = bus_obj_get(&u.data, "spec");
    json_object_set_new(fields, "spec", cli_obj_json(spec ? spec : &u.data));
  }
  msgpack_unpacked_destroy(&u);
}

static void
render_pod(bus_txn *rt[GW_NEMB], const char *name, rendered *r) {
  char vip[64];
  r->fields = ask(sched_query, rt[GW_EMB_SCHED], "pod", "describe", name);
  if (r->fields && !strcmp(str_of(r->fields, "desired"), "Deleted")) {
    json_decref(r->fields);
    r->fields = NULL;
  }
  if (!r->fields)
    return;
  if (!ipam_pod_vip(rt[GW_EMB_IPAM], name, vip, sizeof vip))
    json_object_set_new(r->fields, "virtualIP", json_string(vip));
  snprintf(r->job, sizeof r->job, "%s", str_of(r->fields, "job"));
  snprintf(r->node, sizeof r->node, "%s", str_of(r->fields, "node"));
}

static void
render(bus_txn *rt[GW_NEMB], gw_kind k, const char *name, rendered *r) {
  bus_txn *st = rt[GW_EMB_SCHED];
  memset(r, 0, sizeof *r);
  switch (k) {
  case GW_PODS:
    render_pod(rt, name, r);
    break;
  case GW_TASKS:
    r->fields = ask(sched_query, st, "task", "describe", name);
    snprintf(r->job, sizeof r->job, "%s", str_of(r->fields, "job"));
    break;
  case GW_NODES:
    r->fields = ask(sched_query, st, "node", "describe", name);
    break;
  case GW_JOBS:
    r->fields = row_of(ask(sched_query, st, "job", "list", name), name);
    add_spec(r->fields, st, "specs", name);
    gw_job_workflow(rt[GW_EMB_DAG], name, r->wf, sizeof r->wf);
    break;
  case GW_WORKFLOWS:
    r->fields = ask(dag_query, rt[GW_EMB_DAG], "workflow", "describe", name);
    add_spec(r->fields, rt[GW_EMB_DAG], "specs", name);
    break;
  case GW_DOMAINS:
    r->fields =
        row_of(ask(ipam_query, rt[GW_EMB_IPAM], "domain", "list", name), name);
    break;
  default:
    break;
  }
}

/* ------------------------------------------------------------- writing */

/* The object's opening, up to and with its metadata; the fields follow. */
static int
head(gw_buf *b, gw_kind k, const char *name, uint64_t rv) {
  int rc = gw_buf_printf(b,
                         "{\"apiVersion\":\"" GW_API "\",\"kind\":\"%s\","
                         "\"metadata\":{\"name\":",
                         gw_kind_name(k));
  if (!rc)
    rc = gw_buf_json_str(b, name);
  return rc ? rc
            : gw_buf_printf(b, ",\"resourceVersion\":\"%llu\"}",
                            (unsigned long long)rv);
}

/* A rec: rv, the filters' values (job, node, wf), then the object: its
 * head and tail (what follows the metadata: "}" or ",<members>}"). */
static int
rec(gw_buf *b, uint64_t rv, const char *const attrs[3], gw_kind k,
    const char *name, const char *tail, size_t tlen) {
  unsigned char be[8];
  bus_put_be64(be, rv);
  int rc = gw_buf_add(b, be, 8);
  for (int i = 0; !rc && i < 3; i++)
    rc = gw_buf_add(b, attrs[i], strlen(attrs[i]) + 1);
  if (!rc)
    rc = head(b, k, name, rv);
  return rc ? rc : gw_buf_add(b, tail, tlen);
}

static int
idx_key(char *key, size_t cap, char f, const char *v, gw_kind k,
        const char *name) {
  int n = snprintf(key, cap, "%c/%s/%s/%s", f, v, gw_kind_plural(k), name);
  return n < 0 || (size_t)n >= cap ? 0 : n;
}

/* Index entries of the old rec (old, may be NULL) dropped, the new
 * (now, may be NULL) put. */
static int
reindex(bus_txn *t, gw_kind k, const char *name, const gw_rec *old,
        const rendered *now) {
  const char f[3] = {'j', 'n', 'w'};
  const char *was[3] = {old ? old->job : "", old ? old->node : "",
                        old ? old->wf : ""};
  const char *is[3] = {now ? now->job : "", now ? now->node : "",
                       now ? now->wf : ""};
  char key[GW_KEY_MAX];
  int rc = 0, n;
  for (int i = 0; !rc && i < 3; i++) {
    if (!strcmp(was[i], is[i]))
      continue;
    if (*was[i] && (n = idx_key(key, sizeof key, f[i], was[i], k, name)))
      rc = bus_txn_del(t, "idx", key, (size_t)n);
    if (!rc && *is[i] && (n = idx_key(key, sizeof key, f[i], is[i], k, name)))
      rc = bus_txn_put(t, "idx", key, (size_t)n, "", 0);
  }
  return rc;
}

/* history at seq: hist (NULL: deleted then); changes at seq: obj's
 * filters' values and {"type": type, "object": obj's object}. */
static int
record(bus_txn *t, const char *okey, size_t oklen, uint64_t seq,
       const char *type, const gw_buf *hist, const gw_buf *obj) {
  unsigned char key[GW_KEY_MAX + 16];
  gw_buf c = {0};
  gw_rec r;
  memcpy(key, okey, oklen);
  key[oklen] = '/';
  bus_put_be64(key + oklen + 1, seq);
  int rc = bus_txn_put(t, "history", key, oklen + 9, hist ? hist->p : "",
                       hist ? hist->len : 0);
  if (!rc)
    rc = gw_rec_parse(obj->p, obj->len, &r);
  if (!rc)
    rc = gw_buf_add(&c, obj->p, (size_t)(r.json - obj->p));
  if (!rc)
    rc = gw_buf_printf(&c, "{\"type\":\"%s\",\"object\":", type);
  if (!rc)
    rc = gw_buf_add(&c, r.json, r.len);
  if (!rc)
    rc = gw_buf_add(&c, "}", 1);
  bus_put_be64(key, seq);
  memcpy(key + 8, okey, oklen);
  if (!rc)
    rc = bus_txn_put(t, "changes", key, oklen + 8, c.p, c.len);
  gw_buf_free(&c);
  return rc;
}

/* The object as rendered now, when it differs from old (NULL: none). */
static int
write_now(bus_txn *t, uint64_t seq, gw_kind k, const char *name,
          const char *okey, size_t oklen, const gw_rec *old, const void *oldv,
          size_t oldlen, const rendered *r) {
  const char *attrs[3] = {r->job, r->node, r->wf};
  char *f = cli_json_dumps(r->fields, JSON_SORT_KEYS);
  gw_buf b = {0};
  if (!f)
    return -ENOMEM;
  size_t flen = strlen(f);
  const char *tail = flen > 2 ? f : "}"; /* "{a..}" -> ",a..}" */
  size_t tlen = flen > 2 ? flen : 1;
  int rc = 0;
  if (flen > 2)
    f[0] = ',';
  if (old && !(rc = rec(&b, old->rv, attrs, k, name, tail, tlen)) &&
      b.len == oldlen && !memcmp(b.p, oldv, oldlen))
    goto done; /* unchanged */
  gw_buf_reset(&b);
  if (!rc)
    rc = rec(&b, seq, attrs, k, name, tail, tlen);
  if (!rc)
    rc = bus_txn_put(t, "objects", okey, oklen, b.p, b.len);
  if (!rc)
    rc = record(t, okey, oklen, seq, old ? "MODIFIED" : "ADDED", &b, &b);
  if (!rc)
    rc = reindex(t, k, name, old, r);
done:
  free(f);
  gw_buf_free(&b);
  return rc;
}

/* old gone: its last JSON, at seq, is the DELETED change's object. */
static int
write_gone(bus_txn *t, uint64_t seq, gw_kind k, const char *name,
           const char *okey, size_t oklen, const gw_rec *old) {
  gw_buf h = {0}, b = {0};
  const char *attrs[3] = {old->job, old->node, old->wf};
  int rc = head(&h, k, name, old->rv);
  if (!rc && h.len > old->len)
    rc = BUS_ECORRUPT;
  if (!rc)
    rc = rec(&b, seq, attrs, k, name, old->json + h.len, old->len - h.len);
  if (!rc)
    rc = record(t, okey, oklen, seq, "DELETED", NULL, &b);
  if (!rc)
    rc = reindex(t, k, name, old, NULL);
  if (!rc)
    rc = bus_txn_del(t, "objects", okey, oklen);
  gw_buf_free(&h);
  gw_buf_free(&b);
  return rc;
}

static int
render_one(bus_txn *t, bus_txn *rt[GW_NEMB], uint64_t seq, const gw_touch *w,
           gw_touched *s) {
  char okey[GW_KEY_MAX];
  size_t oklen = gw_obj_key(okey, sizeof okey, w->kind, w->name);
  const void *v = NULL;
  size_t vlen = 0;
  gw_rec old;
  rendered r;
  if (!oklen)
    return 0;
  void *copy = NULL; /* a put may move what a get pointed at */
  if (bus_txn_get(t, "objects", okey, oklen, &v, &vlen) == 0 &&
      (copy = malloc(vlen ? vlen : 1)))
    memcpy(copy, v, vlen);
  v = copy;
  int had = copy && gw_rec_parse(copy, vlen, &old) == 0;
  render(rt, w->kind, w->name, &r);
  int rc = 0;
  if (r.fields)
    rc = write_now(t, seq, w->kind, w->name, okey, oklen, had ? &old : NULL, v,
                   vlen, &r);
  else if (had)
    rc = write_gone(t, seq, w->kind, w->name, okey, oklen, &old);
  if (!rc && w->kind == GW_PODS) { /* its nodes' usage moves with it */
    if (had && *old.node)
      rc = gw_touch_add(s, GW_NODES, old.node);
    if (!rc && *r.node)
      rc = gw_touch_add(s, GW_NODES, r.node);
  }
  json_decref(r.fields);
  free(copy);
  return rc;
}

static int
touch_cmp(const void *a, const void *b) {
  const gw_touch *x = a, *y = b;
  return x->kind != y->kind ? (int)x->kind - (int)y->kind
                            : strcmp(x->name, y->name);
}

int
gw_render_all(bus_txn *t, bus_txn *rt[GW_NEMB], const bus_event *ev,
              gw_touched *s) {
  size_t n = 0;
  if (s->n)
    qsort(s->v, s->n, sizeof *s->v, touch_cmp);
  for (size_t i = 0; i < s->n; i++) /* once each */
    if (!n || touch_cmp(&s->v[n - 1], &s->v[i]))
      s->v[n++] = s->v[i];
  s->n = n;
  int rc = 0;
  for (size_t i = 0; !rc && i < s->n; i++) /* pods may add nodes */
    rc = render_one(t, rt, ev->seq, &s->v[i], s);
  return rc;
}

/*
 * view_reads.c - the gateway view's reads (gateway.h): lists with
 * limit/continue and the job/node/workflow filters, one object, both now
 * or as they were at a time (?at=, from history), the sequence at a time,
 * and revocations. Each call is one read transaction of its own, so a
 * page is consistent within itself; a continue token is the last name
 * given (pages after it show the objects as they are then, as Kubernetes
 * does when its snapshot has expired).
 */
#include <ctype.h>
#include <string.h>

#include "view-int.h"

typedef struct lister {
  bus_txn *t;
  gw_kind kind;
  const gw_list_opts *o;
  gw_buf *out;
  size_t n;              /* items given */
  int more;              /* one more matched past the limit */
  char last[GW_NAME_SZ]; /* name of the last item given */
  size_t skip;           /* key bytes before the name */
  /* history walks: the group being read and its best value so far */
  uint64_t at;
  char group[GW_NAME_SZ];
  gw_buf best;
  int rc;
  /* the walk: its prefix (skip bytes) and, past a token, the callback */
  const char *prefix;
  bus_scan_cb inner;
} lister;

/* Give one object (its rec) to the list; 1 stops the walk. */
static int
give(lister *l, const char *name, size_t nlen, const void *val, size_t vlen) {
  gw_rec r;
  if (!vlen || gw_rec_parse(val, vlen, &r) || !gw_rec_matches(&r, l->o))
    return 0;
  if (l->o->limit && l->n == l->o->limit) {
    l->more = 1;
    return 1;
  }
  if ((l->rc = gw_buf_add(l->out, l->n ? "," : "", l->n ? 1 : 0)) ||
      (l->rc = gw_buf_add(l->out, r.json, r.len)))
    return 1;
  l->n++;
  if (nlen >= sizeof l->last)
    nlen = sizeof l->last - 1;
  memcpy(l->last, name, nlen);
  l->last[nlen] = 0;
  return 0;
}

/* objects <plural>/<name> */
static int
each_object(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  lister *l = ud;
  return give(l, (const char *)k + l->skip, kl - l->skip, v, vl);
}

/* idx <f>/<value>/<plural>/<name>: the object it names */
static int
each_indexed(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  lister *l = ud;
  char okey[GW_KEY_MAX];
  const char *name = (const char *)k + l->skip;
  size_t nlen = kl - l->skip;
  if (nlen >= GW_NAME_SZ)
    return 0;
  int n = snprintf(okey, sizeof okey, "%s/%.*s", gw_kind_plural(l->kind),
                   (int)nlen, name);
  const void *val;
  size_t vlen;
  if (n < 0 || (size_t)n >= sizeof okey ||
      bus_txn_get(l->t, "objects", okey, (size_t)n, &val, &vlen))
    return 0;
  return give(l, name, nlen, val, vlen);
}

/* history <plural>/<name>/be64(seq): per name, the last value <= at. */
static int
flush_group(lister *l) {
  int stop = 0;
  if (l->group[0] && l->best.len)
    stop = give(l, l->group, strlen(l->group), l->best.p, l->best.len);
  l->group[0] = 0;
  gw_buf_reset(&l->best);
  return stop;
}

static int
each_history(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  lister *l = ud;
  if (kl < l->skip + 10)
    return 0;
  const char *name = (const char *)k + l->skip;
  size_t nlen = kl - l->skip - 9;
  uint64_t seq = bus_get_be64((const unsigned char *)k + kl - 8);
  if (nlen >= GW_NAME_SZ)
    return 0;
  if (strlen(l->group) != nlen || memcmp(l->group, name, nlen)) {
    if (flush_group(l))
      return 1;
    memcpy(l->group, name, nlen);
    l->group[nlen] = 0;
  }
  if (seq <= l->at) {
    gw_buf_reset(&l->best);
    if ((l->rc = gw_buf_add(&l->best, v, vl)))
      return 1;
  }
  return 0;
}

/* A continue token: a name as the view keys it. */
static int
token_ok(const char *s) {
  size_t n = strlen(s);
  if (!n || n >= GW_NAME_SZ)
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("-._", *s))
      return 0;
  return 1;
}

/* Rows past the continue token end where the prefix does. */
static int
bounded(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  lister *l = ud;
  if (kl < l->skip || memcmp(k, l->prefix, l->skip))
    return 1;
  return l->inner(k, kl, v, vl, ud);
}

/* The walk: a table, from a prefix, past the continue token. */
static int
walk(lister *l, const char *table, const char *prefix, bus_scan_cb cb,
     int history) {
  char after[GW_KEY_MAX + 16];
  l->prefix = prefix;
  l->skip = strlen(prefix);
  l->inner = cb;
  int rc;
  if (!l->o->cont) {
    rc = bus_txn_scan(l->t, table, prefix, l->skip, cb, l);
  } else {
    int n = snprintf(after, GW_KEY_MAX, "%s%s", prefix, l->o->cont);
    if (n < 0 || n >= GW_KEY_MAX)
      return bus_error(BUS_EINVAL, "continue: too long");
    size_t alen = (size_t)n;
    if (history) { /* past every entry of that name */
      after[alen++] = '/';
      memset(after + alen, 0xff, 8);
      alen += 8;
    }
    rc = bus_txn_scan_after(l->t, table, after, alen, bounded, l);
  }
  if (rc < 0)
    return rc;
  if (history && !l->rc && !l->more)
    flush_group(l);
  return l->rc;
}

/* The index that serves o's filters for kind, into prefix; 0 when none
 * does (then every object of kind is walked, filtered). */
static int
index_prefix(gw_kind k, const gw_list_opts *o, char *prefix, size_t cap) {
  char f = 0;
  const char *v = NULL;
  if (o->job && (k == GW_PODS || k == GW_TASKS))
    f = 'j', v = o->job;
  else if (o->node && k == GW_PODS)
    f = 'n', v = o->node;
  else if (o->workflow && k == GW_JOBS)
    f = 'w', v = o->workflow;
  if (!f)
    return 0;
  int n = snprintf(prefix, cap, "%c/%s/%s/", f, v, gw_kind_plural(k));
  return n > 0 && (size_t)n < cap;
}

uint64_t
gw_seq_at(bus_view *v, int64_t at_ns) {
  bus_txn *t;
  unsigned char key[16];
  const void *k, *val;
  size_t kl, vl;
  uint64_t seq = 0;
  if (at_ns < 0 || bus_view_read(v, &t))
    return 0;
  bus_put_be64(key, (uint64_t)at_ns);
  bus_put_be64(key + 8, UINT64_MAX);
  if (!bus_txn_floor(t, "times", key, sizeof key, &k, &kl, &val, &vl) &&
      kl == 16)
    seq = bus_get_be64((const unsigned char *)k + 8);
  bus_txn_end(t);
  return seq;
}

static int
list_in(lister *l, uint64_t *rv) {
  char prefix[GW_KEY_MAX];
  const gw_list_opts *o = l->o;
  if (o->cont && !token_ok(o->cont))
    return bus_error(BUS_EINVAL, "continue: not a token this list gave");
  if (o->at_ns) {
    snprintf(prefix, sizeof prefix, "%s/", gw_kind_plural(l->kind));
    *rv = l->at;
    return l->at ? walk(l, "history", prefix, each_history, 1) : 0;
  }
  *rv = gw_meta_u64(l->t, "seq");
  if (index_prefix(l->kind, o, prefix, sizeof prefix))
    return walk(l, "idx", prefix, each_indexed, 0);
  snprintf(prefix, sizeof prefix, "%s/", gw_kind_plural(l->kind));
  return walk(l, "objects", prefix, each_object, 0);
}

int
gw_list(bus_view *v, gw_kind kind, const gw_list_opts *o, gw_buf *out,
        uint64_t *rv) {
  gw_list_opts none;
  uint64_t seq = 0;
  if ((unsigned)kind >= GW_NKINDS)
    return bus_error(BUS_EINVAL, "not a kind served");
  if (!o) {
    gw_list_opts_init(&none);
    o = &none;
  }
  lister l = {.kind = kind, .o = o, .out = out};
  if (o->at_ns)
    l.at = gw_seq_at(v, o->at_ns);
  size_t len0 = out->len;
  int rc = bus_view_read(v, &l.t);
  if (rc)
    return rc;
  rc = gw_buf_printf(out,
                     "{\"apiVersion\":\"" GW_API "\",\"kind\":\"%sList\","
                     "\"items\":[",
                     gw_kind_name(kind));
  if (!rc)
    rc = list_in(&l, &seq);
  bus_txn_end(l.t);
  if (!rc)
    rc = gw_buf_printf(out, "],\"metadata\":{\"resourceVersion\":\"%llu\"",
                       (unsigned long long)seq);
  if (!rc && l.more) {
    rc = gw_buf_add(out, ",\"continue\":", 12);
    if (!rc)
      rc = gw_buf_json_str(out, l.last);
  }
  if (!rc)
    rc = gw_buf_add(out, "}}", 2);
  gw_buf_free(&l.best);
  if (rc && out->p) {
    out->len = len0;
    out->p[len0] = 0;
  }
  if (!rc && rv)
    *rv = seq;
  return rc;
}

static int
get_in(bus_txn *t, gw_kind kind, const char *name, uint64_t at, int past,
       gw_buf *out) {
  char key[GW_KEY_MAX + 16];
  size_t klen = gw_obj_key(key, GW_KEY_MAX, kind, name);
  const void *k, *val;
  size_t kl, vl;
  gw_rec r;
  int rc;
  if (!klen)
    return bus_error(BUS_ENOT_FOUND, "no %s %s", gw_kind_name(kind), name);
  if (!past) {
    rc = bus_txn_get(t, "objects", key, klen, &val, &vl);
  } else {
    key[klen++] = '/';
    bus_put_be64((unsigned char *)key + klen, at);
    rc = bus_txn_floor(t, "history", key, klen + 8, &k, &kl, &val, &vl);
    if (!rc && (!at || kl != klen + 8 || memcmp(k, key, klen) || !vl))
      rc = BUS_ENOT_FOUND;
  }
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "no %s %s%s", gw_kind_name(kind), name,
                     past ? " then" : "");
  if (!rc && (rc = gw_rec_parse(val, vl, &r)))
    return bus_error(rc, "a stored %s is not an object", gw_kind_name(kind));
  return rc ? rc : gw_buf_add(out, r.json, r.len);
}

int
gw_get(bus_view *v, gw_kind kind, const char *name, int64_t at_ns,
       gw_buf *out) {
  bus_txn *t;
  if ((unsigned)kind >= GW_NKINDS || !name)
    return bus_error(BUS_EINVAL, "not a kind served");
  uint64_t at = at_ns ? gw_seq_at(v, at_ns) : 0;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = get_in(t, kind, name, at, at_ns != 0, out);
  bus_txn_end(t);
  return rc;
}

int
gw_cert_revoked(bus_view *v, const char *serial) {
  bus_txn *t;
  const void *val;
  size_t vl;
  char low[80];
  size_t n = serial ? strlen(serial) : 0;
  if (!n || n >= sizeof low || bus_view_read(v, &t))
    return 0;
  for (size_t i = 0; i <= n; i++) /* cert.issued names it in lowercase */
    low[i] = (char)tolower((unsigned char)serial[i]);
  int rc = bus_txn_get(t, "revoked", low, n, &val, &vl);
  bus_txn_end(t);
  return rc == 0;
}

uint64_t
gw_revocations(bus_view *v) {
  bus_txn *t;
  if (bus_view_read(v, &t))
    return 0;
  uint64_t n = gw_meta_u64(t, "revocations");
  bus_txn_end(t);
  return n;
}

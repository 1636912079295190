/*
 * store.c - the node's local LMDB: desired states, run records and the
 * outbox of reports not yet acknowledged.
 *
 * Tables: "desired" pod -> [8-byte big-endian stream seq][pod.desired map]
 * (kept only when newer, so a redelivery never rolls a pod back); "runs"
 * pod -> edge_run; "outbox" 8-byte big-endian key -> msgpack
 * [subject, type, id, ts, data]. Outbox keys grow from the last key at
 * open, so the order of keys is the order reports were made, and a
 * report's id and ts are fixed when it is queued: a re-sent report is
 * the same message. "nets" pod -> edge_net: the network a raw+netns pod
 * holds, claimed and freed in single transactions, so no /30 is ever held
 * by two pods. LMDB's codes are translated here (BUS_ESTORE with the
 * text in bus_last_error()). Write transactions serialise on LMDB's own
 * lock; the env is opened MDB_NOTLS so any thread may read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "edge.h"
#include "podnet.h"

struct edge_store {
  MDB_env *env;
  MDB_dbi desired, runs, outbox, nets;
  pthread_mutex_t mu; /* next_key */
  uint64_t next_key;
};

static int
fail(int rc, const char *what) {
  return bus_error(BUS_ESTORE, "edge store: %s: %s", what, mdb_strerror(rc));
}

static void
put_be64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (unsigned char)v;
}

static uint64_t
get_be64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

static int
last_key(edge_store *s) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  rc = mdb_cursor_open(t, s->outbox, &c);
  if (!rc) {
    if (mdb_cursor_get(c, &k, &v, MDB_LAST) == 0 && k.mv_size == 8)
      s->next_key = get_be64(k.mv_data) + 1;
    mdb_cursor_close(c);
  }
  mdb_txn_abort(t);
  return rc ? fail(rc, "cursor") : 0;
}

int
edge_store_open(edge_store **out, const char *dir) {
  edge_store *s = calloc(1, sizeof *s);
  MDB_txn *t = NULL;
  int rc;
  if (!s)
    return -ENOMEM;
  s->next_key = 1;
  pthread_mutex_init(&s->mu, NULL);
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    rc = bus_error(-errno, "edge store: mkdir %s", dir);
    goto err;
  }
  if ((rc = mdb_env_create(&s->env)) || (rc = mdb_env_set_maxdbs(s->env, 8)) ||
      (rc = mdb_env_set_mapsize(s->env, (size_t)1 << 30)) ||
      (rc = mdb_env_open(s->env, dir, MDB_NOTLS, 0600)) ||
      (rc = mdb_txn_begin(s->env, NULL, 0, &t)) ||
      (rc = mdb_dbi_open(t, "desired", MDB_CREATE, &s->desired)) ||
      (rc = mdb_dbi_open(t, "runs", MDB_CREATE, &s->runs)) ||
      (rc = mdb_dbi_open(t, "outbox", MDB_CREATE, &s->outbox)) ||
      (rc = mdb_dbi_open(t, "nets", MDB_CREATE, &s->nets)) ||
      (rc = mdb_txn_commit(t))) {
    if (t && rc)
      mdb_txn_abort(t);
    rc = fail(rc, dir);
    goto err;
  }
  if ((rc = last_key(s)))
    goto err;
  *out = s;
  return 0;
err:
  edge_store_close(s);
  return rc;
}

void
edge_store_close(edge_store *s) {
  if (!s)
    return;
  if (s->env)
    mdb_env_close(s->env);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static MDB_val
key_of(const char *pod) {
  MDB_val k = {strlen(pod), (void *)pod};
  return k;
}

/* ----------------------------------------------------------- desired */

int
edge_store_desired_put(edge_store *s, const char *pod, uint64_t seq,
                       const void *data, size_t len, int *stored) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (stored)
    *stored = 0;
  if (rc)
    return fail(rc, "begin");
  rc = mdb_get(t, s->desired, &k, &v);
  if (rc == 0 && v.mv_size >= 8 && get_be64(v.mv_data) >= seq) {
    mdb_txn_abort(t);
    return 0;
  }
  v.mv_size = 8 + len;
  if ((rc = mdb_put(t, s->desired, &k, &v, MDB_RESERVE))) {
    mdb_txn_abort(t);
    return fail(rc, "put desired");
  }
  put_be64(v.mv_data, seq);
  memcpy((unsigned char *)v.mv_data + 8, data, len);
  if ((rc = mdb_txn_commit(t)))
    return fail(rc, "commit");
  if (stored)
    *stored = 1;
  return 0;
}

typedef struct copied {
  char pod[EDGE_POD_SZ];
  void *data;
  size_t len;
} copied;

int
edge_store_desired_each(edge_store *s, edge_desired_cb cb, void *ud) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  copied *all = NULL;
  size_t n = 0, cap = 0;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  if ((rc = mdb_cursor_open(t, s->desired, &c))) {
    mdb_txn_abort(t);
    return fail(rc, "cursor");
  }
  for (int op = MDB_FIRST; mdb_cursor_get(c, &k, &v, op) == 0; op = MDB_NEXT) {
    if (k.mv_size >= EDGE_POD_SZ || v.mv_size < 8)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      copied *grown = realloc(all, cap * sizeof *all);
      if (!grown)
        break;
      all = grown;
    }
    memcpy(all[n].pod, k.mv_data, k.mv_size);
    all[n].pod[k.mv_size] = 0;
    all[n].len = v.mv_size - 8;
    all[n].data = malloc(all[n].len + 1);
    if (!all[n].data)
      break;
    memcpy(all[n].data, (unsigned char *)v.mv_data + 8, all[n].len);
    n++;
  }
  mdb_cursor_close(c);
  mdb_txn_abort(t);
  for (size_t i = 0; i < n; i++) {
    cb(all[i].pod, all[i].data, all[i].len, ud);
    free(all[i].data);
  }
  free(all);
  return 0;
}

int
edge_store_desired_get(edge_store *s, const char *pod, void **data,
                       size_t *len) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  rc = mdb_get(t, s->desired, &k, &v);
  if (rc == 0 && v.mv_size >= 8 && (*data = malloc(v.mv_size - 8 + 1))) {
    *len = v.mv_size - 8;
    memcpy(*data, (unsigned char *)v.mv_data + 8, *len);
  } else if (rc == 0)
    rc = MDB_NOTFOUND;
  mdb_txn_abort(t);
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  return rc ? fail(rc, "get desired") : 0;
}

/* -------------------------------------------------------------- runs */

int
edge_store_run_get(edge_store *s, const char *pod, edge_run *r) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  rc = mdb_get(t, s->runs, &k, &v);
  if (rc == 0 && v.mv_size == sizeof *r)
    memcpy(r, v.mv_data, sizeof *r);
  else if (rc == 0)
    rc = MDB_NOTFOUND;
  mdb_txn_abort(t);
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  return rc ? fail(rc, "get run") : 0;
}

static int
queue_in(edge_store *s, MDB_txn *t, const edge_msg *m) {
  char id[33];
  struct timespec ts;
  unsigned char kb[8];
  clock_gettime(CLOCK_REALTIME, &ts);
  bus_event_new_id(id);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 5);
  msgpack_pack_str_with_body(&pk, m->subject, strlen(m->subject));
  msgpack_pack_str_with_body(&pk, m->type, strlen(m->type));
  msgpack_pack_str_with_body(&pk, id, strlen(id));
  msgpack_pack_int64(&pk, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
  msgpack_pack_bin_with_body(&pk, m->data, m->len);
  pthread_mutex_lock(&s->mu);
  uint64_t key = s->next_key++;
  pthread_mutex_unlock(&s->mu);
  put_be64(kb, key);
  MDB_val k = {8, kb}, v = {sb.size, sb.data};
  int rc = mdb_put(t, s->outbox, &k, &v, 0);
  msgpack_sbuffer_destroy(&sb);
  return rc ? fail(rc, "queue") : 0;
}

int
edge_store_run_put(edge_store *s, const char *pod, const edge_run *r,
                   const edge_msg *msg) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v = {sizeof *r, (void *)r};
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return fail(rc, "begin");
  if (r)
    rc = mdb_put(t, s->runs, &k, &v, 0);
  else if ((rc = mdb_del(t, s->runs, &k, NULL)) == MDB_NOTFOUND)
    rc = 0;
  if (rc) {
    mdb_txn_abort(t);
    return fail(rc, "put run");
  }
  if (msg && (rc = queue_in(s, t, msg))) {
    mdb_txn_abort(t);
    return rc;
  }
  return (rc = mdb_txn_commit(t)) ? fail(rc, "commit") : 0;
}

int
edge_store_forget(edge_store *s, const char *pod, const edge_msg *msg) {
  MDB_txn *t;
  MDB_val k = key_of(pod);
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return fail(rc, "begin");
  MDB_dbi tables[] = {s->runs, s->desired};
  for (size_t i = 0; !rc && i < 2; i++)
    if ((rc = mdb_del(t, tables[i], &k, NULL)) == MDB_NOTFOUND)
      rc = 0;
  if (rc) {
    mdb_txn_abort(t);
    return fail(rc, "forget");
  }
  if (msg && (rc = queue_in(s, t, msg))) {
    mdb_txn_abort(t);
    return rc;
  }
  return (rc = mdb_txn_commit(t)) ? fail(rc, "commit") : 0;
}

/*
 * Every (pod, value) of a table, copied out of one read transaction so
 * the caller may write the store while it goes through them. conv turns
 * a stored value into vsize bytes (0: skip the record). Each item is
 * ITEM_VAL_OFF + vsize bytes, rounded up: the pod's name, then the value.
 */
#define ITEM_VAL_OFF ((EDGE_POD_SZ + 15) / 16 * 16)

typedef int (*conv_fn)(const MDB_val *v, void *out);

typedef struct table_copy {
  unsigned char *items;
  size_t n, stride;
} table_copy;

static int
grow(table_copy *all, size_t *cap) {
  if (all->n < *cap)
    return 1;
  size_t want = *cap ? *cap * 2 : 16;
  unsigned char *p = realloc(all->items, want * all->stride);
  if (!p)
    return 0;
  all->items = p;
  *cap = want;
  return 1;
}

static int
copy_table(edge_store *s, MDB_dbi dbi, size_t vsize, conv_fn conv,
           table_copy *all) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  size_t cap = 0;
  memset(all, 0, sizeof *all);
  all->stride = (ITEM_VAL_OFF + vsize + 15) / 16 * 16;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  if ((rc = mdb_cursor_open(t, dbi, &c))) {
    mdb_txn_abort(t);
    return fail(rc, "cursor");
  }
  for (int op = MDB_FIRST; mdb_cursor_get(c, &k, &v, op) == 0; op = MDB_NEXT) {
    if (k.mv_size >= EDGE_POD_SZ || !grow(all, &cap))
      continue;
    unsigned char *it = all->items + all->n * all->stride;
    if (!conv(&v, it + ITEM_VAL_OFF))
      continue;
    memcpy(it, k.mv_data, k.mv_size);
    it[k.mv_size] = 0;
    all->n++;
  }
  mdb_cursor_close(c);
  mdb_txn_abort(t);
  return 0;
}

static int
run_of(const MDB_val *v, void *out) {
  if (v->mv_size != sizeof(edge_run))
    return 0;
  memcpy(out, v->mv_data, sizeof(edge_run));
  return 1;
}

int
edge_store_run_each(edge_store *s, edge_run_cb cb, void *ud) {
  table_copy all;
  int rc = copy_table(s, s->runs, sizeof(edge_run), run_of, &all);
  for (size_t i = 0; !rc && i < all.n; i++) {
    unsigned char *it = all.items + i * all.stride;
    cb((const char *)it, (const edge_run *)(it + ITEM_VAL_OFF), ud);
  }
  free(all.items);
  return rc;
}

/* -------------------------------------------------------------- nets */

int
edge_cidr_parse(const char *cidr, uint32_t *base, int *plen) {
  char buf[32];
  struct in_addr in;
  const char *slash = cidr ? strchr(cidr, '/') : NULL;
  if (!slash || (size_t)(slash - cidr) >= sizeof buf)
    return bus_error(BUS_EINVAL, "pod CIDR %s: expected a.b.c.d/len",
                     cidr ? cidr : "(none)");
  memcpy(buf, cidr, (size_t)(slash - cidr));
  buf[slash - cidr] = 0;
  char *end;
  long len = strtol(slash + 1, &end, 10);
  if (inet_pton(AF_INET, buf, &in) != 1 || end == slash + 1 || *end)
    return bus_error(BUS_EINVAL, "pod CIDR %s: expected a.b.c.d/len", cidr);
  if (len < 8 || len > 30)
    return bus_error(BUS_EINVAL,
                     "pod CIDR %s: the length must be 8 to 30 (a /30 per pod)",
                     cidr);
  uint32_t a = ntohl(in.s_addr), mask = ~0u << (32 - len);
  if (a & ~mask)
    return bus_error(BUS_EINVAL, "pod CIDR %s has host bits set", cidr);
  *base = a;
  *plen = (int)len;
  return 0;
}

static void
ip_text(uint32_t a, char out[16]) {
  struct in_addr in = {htonl(a)};
  inet_ntop(AF_INET, &in, out, 16);
}

static int
net_of(const MDB_val *v, void *out) {
  edge_net *n = out;
  if (v->mv_size != sizeof *n)
    return 0;
  memcpy(n, v->mv_data, sizeof *n);
  n->ns[sizeof n->ns - 1] = n->host_if[sizeof n->host_if - 1] = 0;
  n->host_ip[sizeof n->host_ip - 1] = n->pod_ip[sizeof n->pod_ip - 1] = 0;
  return 1;
}

/* Whether another pod's record (than pod) holds this pod address or host
 * interface. */
static int
net_taken(MDB_txn *t, MDB_dbi dbi, const char *pod, const char *pod_ip,
          const char *host_if, int *err) {
  MDB_cursor *c;
  MDB_val k, v;
  edge_net n;
  int taken = 0;
  if ((*err = mdb_cursor_open(t, dbi, &c)))
    return 1;
  for (int op = MDB_FIRST; !taken && mdb_cursor_get(c, &k, &v, op) == 0;
       op = MDB_NEXT) {
    if (!net_of(&v, &n) ||
        (k.mv_size == strlen(pod) && !memcmp(k.mv_data, pod, k.mv_size)))
      continue;
    taken = (pod_ip && !strcmp(n.pod_ip, pod_ip)) ||
            (host_if && !strcmp(n.host_if, host_if));
  }
  mdb_cursor_close(c);
  return taken;
}

int
edge_store_net_claim(edge_store *s, const char *pod, const char *cidr,
                     edge_net *out) {
  uint32_t base;
  int plen, err = 0;
  int rc = edge_cidr_parse(cidr, &base, &plen);
  if (rc)
    return rc;
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  if ((rc = mdb_txn_begin(s->env, NULL, 0, &t)))
    return fail(rc, "begin");
  if (mdb_get(t, s->nets, &k, &v) == 0 && net_of(&v, out)) {
    mdb_txn_abort(t); /* it holds one already: the same again */
    return 0;
  }
  edge_net n;
  memset(&n, 0, sizeof n);
  uint32_t blocks = 1u << (30 - plen), i;
  for (i = 0; i < blocks; i++) {
    ip_text(base + 4 * i + 2, n.pod_ip);
    if (!net_taken(t, s->nets, pod, n.pod_ip, NULL, &err) || err)
      break;
  }
  if (err || i == blocks) {
    mdb_txn_abort(t);
    return err ? fail(err, "nets")
               : bus_error(-ENOSPC, "pod CIDR %s has no free /30 (%u in use)",
                           cidr, blocks);
  }
  ip_text(base + 4 * i + 1, n.host_ip);
  n.plen = 30;
  podnet_ns_name(pod, n.ns);
  for (unsigned salt = 0;; salt++) {
    podnet_host_ifname(pod, salt, n.host_if);
    if (!net_taken(t, s->nets, pod, NULL, n.host_if, &err) || err)
      break;
  }
  v.mv_size = sizeof n;
  v.mv_data = &n;
  if (err || (err = mdb_put(t, s->nets, &k, &v, 0))) {
    mdb_txn_abort(t);
    return fail(err, "claim a network");
  }
  if ((rc = mdb_txn_commit(t)))
    return fail(rc, "commit");
  *out = n;
  return 0;
}

int
edge_store_net_get(edge_store *s, const char *pod, edge_net *n) {
  MDB_txn *t;
  MDB_val k = key_of(pod), v;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  rc = mdb_get(t, s->nets, &k, &v);
  if (rc == 0 && !net_of(&v, n))
    rc = MDB_NOTFOUND;
  mdb_txn_abort(t);
  if (rc == MDB_NOTFOUND)
    return BUS_ENOT_FOUND;
  return rc ? fail(rc, "get net") : 0;
}

int
edge_store_net_del(edge_store *s, const char *pod) {
  MDB_txn *t;
  MDB_val k = key_of(pod);
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return fail(rc, "begin");
  if ((rc = mdb_del(t, s->nets, &k, NULL)) && rc != MDB_NOTFOUND) {
    mdb_txn_abort(t);
    return fail(rc, "free a network");
  }
  return (rc = mdb_txn_commit(t)) ? fail(rc, "commit") : 0;
}

int
edge_store_net_each(edge_store *s, edge_net_cb cb, void *ud) {
  table_copy all;
  int rc = copy_table(s, s->nets, sizeof(edge_net), net_of, &all);
  for (size_t i = 0; !rc && i < all.n; i++) {
    unsigned char *it = all.items + i * all.stride;
    cb((const char *)it, (const edge_net *)(it + ITEM_VAL_OFF), ud);
  }
  free(all.items);
  return rc;
}

/* ------------------------------------------------------------ outbox */

int
edge_store_enqueue_n(edge_store *s, const edge_msg *msgs, size_t n) {
  MDB_txn *t;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return fail(rc, "begin");
  for (size_t i = 0; i < n; i++)
    if ((rc = queue_in(s, t, &msgs[i]))) {
      mdb_txn_abort(t);
      return rc;
    }
  return (rc = mdb_txn_commit(t)) ? fail(rc, "commit") : 0;
}

int
edge_store_enqueue(edge_store *s, const edge_msg *msg) {
  return edge_store_enqueue_n(s, msg, 1);
}

static int
decode_queued(const void *buf, size_t len, edge_queued *q) {
  msgpack_zone z;
  msgpack_object o;
  int rc = BUS_EMALFORMED;
  msgpack_zone_init(&z, 1024);
  if (msgpack_unpack(buf, len, NULL, &z, &o) < 0 ||
      o.type != MSGPACK_OBJECT_ARRAY || o.via.array.size != 5)
    goto out;
  const msgpack_object *a = o.via.array.ptr;
  if (a[0].type != MSGPACK_OBJECT_STR || a[1].type != MSGPACK_OBJECT_STR ||
      a[2].type != MSGPACK_OBJECT_STR || a[4].type != MSGPACK_OBJECT_BIN ||
      a[0].via.str.size >= sizeof q->subject ||
      a[1].via.str.size >= sizeof q->type || a[2].via.str.size >= sizeof q->id)
    goto out;
  memcpy(q->subject, a[0].via.str.ptr, a[0].via.str.size);
  q->subject[a[0].via.str.size] = 0;
  memcpy(q->type, a[1].via.str.ptr, a[1].via.str.size);
  q->type[a[1].via.str.size] = 0;
  memcpy(q->id, a[2].via.str.ptr, a[2].via.str.size);
  q->id[a[2].via.str.size] = 0;
  q->ts =
      a[3].type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)a[3].via.u64 : 0;
  q->len = a[4].via.bin.size;
  if (!(q->data = malloc(q->len + 1))) {
    rc = -ENOMEM;
    goto out;
  }
  memcpy(q->data, a[4].via.bin.ptr, q->len);
  rc = 0;
out:
  msgpack_zone_destroy(&z);
  return rc;
}

int
edge_store_peek_n(edge_store *s, edge_queued *q, size_t max, size_t *n) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  *n = 0;
  memset(q, 0, sizeof *q);
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t);
  if (rc)
    return fail(rc, "read");
  if ((rc = mdb_cursor_open(t, s->outbox, &c))) {
    mdb_txn_abort(t);
    return fail(rc, "cursor");
  }
  MDB_cursor_op op = MDB_FIRST;
  int dec = 0; /* an unreadable one is handed over only first */
  while (*n < max && !dec) {
    rc = mdb_cursor_get(c, &k, &v, op);
    op = MDB_NEXT;
    if (rc || k.mv_size != 8)
      break;
    edge_queued *e = &q[*n];
    memset(e, 0, sizeof *e);
    e->key = get_be64(k.mv_data);
    if (!(dec = decode_queued(v.mv_data, v.mv_size, e)))
      ++*n;
  }
  if (*n)
    rc = 0;
  else if (dec)
    rc = dec;
  else
    rc = rc && rc != MDB_NOTFOUND ? fail(rc, "peek") : BUS_ENOT_FOUND;
  mdb_cursor_close(c);
  mdb_txn_abort(t);
  return rc;
}

int
edge_store_peek(edge_store *s, edge_queued *q) {
  size_t n;
  return edge_store_peek_n(s, q, 1, &n);
}

void
edge_queued_free(edge_queued *q) {
  free(q->data);
  q->data = NULL;
}

int
edge_store_drop(edge_store *s, uint64_t key) {
  MDB_txn *t;
  unsigned char kb[8];
  put_be64(kb, key);
  MDB_val k = {8, kb};
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return fail(rc, "begin");
  if ((rc = mdb_del(t, s->outbox, &k, NULL)) && rc != MDB_NOTFOUND) {
    mdb_txn_abort(t);
    return fail(rc, "drop");
  }
  return (rc = mdb_txn_commit(t)) ? fail(rc, "commit") : 0;
}

int
edge_store_drop_upto(edge_store *s, uint64_t key) {
  MDB_txn *t;
  MDB_cursor *c;
  MDB_val k, v;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return fail(rc, "begin");
  if ((rc = mdb_cursor_open(t, s->outbox, &c))) {
    mdb_txn_abort(t);
    return fail(rc, "cursor");
  }
  while ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0 && k.mv_size == 8 &&
         get_be64(k.mv_data) <= key)
    if ((rc = mdb_cursor_del(c, 0)))
      break;
  mdb_cursor_close(c);
  if (rc && rc != MDB_NOTFOUND) {
    mdb_txn_abort(t);
    return fail(rc, "drop");
  }
  return (rc = mdb_txn_commit(t)) ? fail(rc, "commit") : 0;
}

uint64_t
edge_store_queued(edge_store *s) {
  MDB_txn *t;
  MDB_stat st;
  uint64_t n = 0;
  if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t))
    return 0;
  if (mdb_stat(t, s->outbox, &st) == 0)
    n = st.ms_entries;
  mdb_txn_abort(t);
  return n;
}

/*
 * records.c - lark-engine's rows: read and written whole, their keys, the
 * walks over a Job's pods and nodes, and the names of stages and roles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-int.h"

const char *const eng_stage_names[ENG_NSTAGES] = {"rollout", "update_dataset",
                                                  "train", "sync_weights"};

int
eng_stage_of(bus_str s) {
  for (int i = 0; i < ENG_NSTAGES; i++)
    if (bus_str_eq(s, eng_stage_names[i]))
      return i;
  return -1;
}

static const char *const roles[] = {"Actor", "Rollout", "Env"};

const char *
eng_role_name(int role) {
  return role >= 0 && role <= ENG_ENV_ROLE ? roles[role] : "";
}

int
eng_get(bus_txn *t, const char *table, const void *key, size_t klen, void *r,
        size_t sz) {
  const void *v;
  size_t len;
  int rc = bus_txn_get(t, table, key, klen, &v, &len);
  if (rc)
    return rc;
  if (len != sz || ((const uint8_t *)v)[0] != ENG_LAYOUT)
    return bus_error(BUS_ECORRUPT, "%s: a row of unknown layout", table);
  memcpy(r, v, sz);
  return 0;
}

int
eng_job_get(bus_txn *t, const char *job, eng_job *j) {
  return eng_get(t, "jobs", job, strlen(job), j, sizeof *j);
}

int
eng_job_put(bus_txn *t, const eng_job *j) {
  return bus_txn_put(t, "jobs", j->name, strlen(j->name), j, sizeof *j);
}

int
eng_pod_get(bus_txn *t, const char *pod, eng_pod *p) {
  return eng_get(t, "pods", pod, strlen(pod), p, sizeof *p);
}

int
eng_pod_put(bus_txn *t, const eng_pod *p) {
  return bus_txn_put(t, "pods", p->pod, strlen(p->pod), p, sizeof *p);
}

int
eng_node_get(bus_txn *t, const char *node, eng_node *n) {
  return eng_get(t, "nodes", node, strlen(node), n, sizeof *n);
}

size_t
eng_key2(char *key, const char *a, const char *b) {
  int n = snprintf(key, ENG_KEY_SZ, "%s/%s", a, b);
  return n < 0 ? 0 : (size_t)n >= ENG_KEY_SZ ? ENG_KEY_SZ - 1 : (size_t)n;
}

size_t
eng_key_seq(unsigned char *key, const char *job, uint64_t n) {
  size_t l = strlen(job);
  memcpy(key, job, l);
  key[l] = '/';
  bus_put_be64(key + l + 1, n);
  return l + 9;
}

const char *
eng_subject_id(const char *subject) {
  const char *p = strlen(subject) > 8 ? strchr(subject + 8, '.') : NULL;
  return p ? p + 1 : "";
}

/* ------------------------------------------------------------- walks */

typedef struct keys {
  char (*v)[ENG_KEY_SZ];
  size_t n, cap;
} keys;

static int
collect(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  keys *ks = ud;
  if (kl >= ENG_KEY_SZ)
    return 0;
  if (bus_grow(&ks->v, ks->n, &ks->cap, sizeof *ks->v, 16))
    return bus_error(-ENOMEM, "out of memory");
  memcpy(ks->v[ks->n], k, kl);
  ks->v[ks->n++][kl] = 0;
  return 0;
}

int
eng_each_pod(bus_txn *t, const char *job, eng_pod_fn fn, void *ud) {
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s-", job);
  keys ks = {NULL, 0, 0};
  int rc = bus_txn_scan(t, "pods", prefix, (size_t)plen, collect, &ks);
  for (size_t i = 0; !rc && i < ks.n; i++) {
    eng_pod p;
    if (!eng_pod_get(t, ks.v[i], &p) && !strcmp(p.job, job))
      rc = fn(t, &p, ud);
  }
  free(ks.v);
  return rc;
}

typedef struct rawkey {
  unsigned char k[ENG_KEY_SZ];
  size_t len;
} rawkey;

typedef struct rawkeys {
  rawkey *v;
  size_t n, cap;
} rawkeys;

static int
collect_raw(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  rawkeys *ks = ud;
  if (kl > ENG_KEY_SZ)
    return 0;
  if (bus_grow(&ks->v, ks->n, &ks->cap, sizeof *ks->v, 16))
    return bus_error(-ENOMEM, "out of memory");
  memcpy(ks->v[ks->n].k, k, kl);
  ks->v[ks->n++].len = kl;
  return 0;
}

int
eng_del_prefix(bus_txn *t, const char *table, const void *prefix, size_t plen) {
  rawkeys ks = {0};
  int rc = bus_txn_scan(t, table, prefix, plen, collect_raw, &ks);
  for (size_t i = 0; !rc && i < ks.n; i++)
    rc = bus_txn_del(t, table, ks.v[i].k, ks.v[i].len);
  free(ks.v);
  return rc;
}

typedef struct jn {
  size_t plen;
  eng_name_fn fn;
  void *ud;
} jn;

static int
jnode_cb(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  jn *j = ud;
  char node[ENG_NAME_SZ];
  if (kl <= j->plen || kl - j->plen >= sizeof node)
    return 0;
  memcpy(node, (const char *)k + j->plen, kl - j->plen);
  node[kl - j->plen] = 0;
  return j->fn(node, j->ud);
}

int
eng_each_jnode(bus_txn *t, const char *job, eng_name_fn fn, void *ud) {
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s/", job);
  jn j = {(size_t)plen, fn, ud};
  return bus_txn_scan(t, "jnodes", prefix, (size_t)plen, jnode_cb, &j);
}

/*
 * queries.c - lark-logs' reads: one pod's binding, or all of them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs-int.h"

/* The binding's names, in the order a reply gives them. */
static const struct {
  const char *key;
  size_t off;
} names[] = {
    {"pod", offsetof(logs_binding, pod)},
    {"job", offsetof(logs_binding, job)},
    {"task", offsetof(logs_binding, task)},
    {"node", offsetof(logs_binding, node)},
    {"phase", offsetof(logs_binding, phase)},
};

static void
pack_binding(msgpack_packer *pk, const logs_binding *b) {
  msgpack_pack_map(pk, 7);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    bus_pack_kv_str(pk, names[i].key, (const char *)b + names[i].off);
  bus_pack_kv_uint(pk, "attempt", b->attempt);
  bus_pack_kv_bool(pk, "bound", b->bound);
}

/* A binding of the Job ud names ("" for all). */
static int
list_one(const void *k, size_t kl, const void *v, size_t vl, msgpack_packer *pk,
         void *ud) {
  (void)k, (void)kl;
  const char *job = ud;
  logs_binding b;
  if (vl != sizeof b)
    return 0;
  memcpy(&b, v, sizeof b);
  if (*job && strcmp(job, b.job))
    return 0;
  pack_binding(pk, &b);
  return 1;
}

int
logs_query(bus_txn *t, const char *kind, const char *verb,
           const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)kind, (void)ud;
  char name[LOGS_DNAME_SZ] = "";
  bus_obj_str(req, "name", name, sizeof name);
  if (!strcmp(verb, "describe") && name[0]) {
    logs_binding b;
    int rc = logs_binding_get(t, name, &b);
    if (rc == BUS_ENOT_FOUND)
      return bus_error(rc, "lark-logs knows no pod %s", name);
    if (!rc)
      pack_binding(pk, &b);
    return rc;
  }
  if (strcmp(verb, "list"))
    return bus_error(BUS_EINVAL,
                     "verbs: list {name?: job}, describe {name}, sync");
  return bus_txn_list(t, T_PODS, NULL, 0, 0, list_one, name, pk);
}

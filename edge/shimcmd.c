/*
 * shimcmd.c - the pod shim's command line and environment (shimcmd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shimcmd.h"

extern char **environ;

static void
env_set(edge_env *e, const char *name, size_t nlen, const char *val,
        size_t vlen) {
  char *kv = malloc(nlen + vlen + 2);
  if (!kv)
    return;
  memcpy(kv, name, nlen);
  kv[nlen] = '=';
  memcpy(kv + nlen + 1, val, vlen);
  kv[nlen + 1 + vlen] = 0;
  for (size_t i = 0; i < e->n; i++)
    if (!strncmp(e->v[i], kv, nlen + 1)) {
      free(e->v[i]);
      e->v[i] = kv;
      return;
    }
  if (e->n + 2 > e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 64;
    char **g = realloc(e->v, cap * sizeof *g);
    if (!g) {
      free(kv);
      return;
    }
    e->v = g;
    e->cap = cap;
  }
  e->v[e->n++] = kv;
  e->v[e->n] = NULL;
}

static void
env_sets(edge_env *e, const char *name, const char *val) {
  env_set(e, name, strlen(name), val, strlen(val));
}

void
edge_env_free(edge_env *e) {
  for (size_t i = 0; i < e->n; i++)
    free(e->v[i]);
  free(e->v);
}

/* A scalar as text into buf. */
static const char *
scalar(const msgpack_object *o, char *buf, size_t cap, size_t *len) {
  switch (o->type) {
  case MSGPACK_OBJECT_STR:
    *len = o->via.str.size;
    return o->via.str.ptr;
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    snprintf(buf, cap, "%llu", (unsigned long long)o->via.u64);
    break;
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    snprintf(buf, cap, "%lld", (long long)o->via.i64);
    break;
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    snprintf(buf, cap, "%g", o->via.f64);
    break;
  case MSGPACK_OBJECT_BOOLEAN:
    snprintf(buf, cap, "%s", o->via.boolean ? "true" : "false");
    break;
  default:
    buf[0] = 0;
  }
  *len = strlen(buf);
  return buf;
}

static int
safe_name(const char *s, size_t n) {
  if (!n || memchr(s, '=', n) || memchr(s, 0, n))
    return 0;
  return 1;
}

/* The platform's variables about devices the pod asked for. */
static void
env_devices(edge_env *e, const msgpack_object *dev, const char *node) {
  if (!dev || dev->type != MSGPACK_OBJECT_MAP || !dev->via.map.size)
    return;
  char list[2048] = "", num[32];
  size_t used = 0;
  uint64_t total = 0;
  for (uint32_t i = 0; i < dev->via.map.size; i++) {
    const msgpack_object_kv *kv = &dev->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR ||
        kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER)
      continue;
    total += kv->val.via.u64;
    int n = snprintf(list + used, sizeof list - used, "%s%.*s=%llu",
                     used ? "," : "", (int)kv->key.via.str.size,
                     kv->key.via.str.ptr, (unsigned long long)kv->val.via.u64);
    if (n > 0 && used + (size_t)n < sizeof list)
      used += (size_t)n;
  }
  env_sets(e, "RLINF_EMBODIED_DEVICES", list);
  snprintf(num, sizeof num, "%llu", (unsigned long long)total);
  env_sets(e, "RLINF_EMBODIED_DEVICE_COUNT", num);
  env_sets(e, "RLINF_EMBODIED_NODE", node);
}

/* Environment: the agent's (without its own LARK_ and NATS settings),
 * raw.environment, the message's env map, then what the node knows. */
void
edge_shim_env(edge_proc *p, const msgpack_object *d, edge_env *e) {
  char buf[64];
  size_t len;
  for (char **v = environ; v && *v; v++)
    if (strncmp(*v, "LARK_", 5) && strncmp(*v, "NATS_", 5)) {
      const char *eq = strchr(*v, '=');
      if (eq)
        env_set(e, *v, (size_t)(eq - *v), eq + 1, strlen(eq + 1));
    }
  const msgpack_object *ev = bus_obj_get(bus_obj_get(d, "raw"), "environment");
  for (uint32_t i = 0;
       ev && ev->type == MSGPACK_OBJECT_ARRAY && i < ev->via.array.size; i++) {
    const msgpack_object *n = bus_obj_get(&ev->via.array.ptr[i], "name");
    const msgpack_object *v = bus_obj_get(&ev->via.array.ptr[i], "value");
    if (!n || n->type != MSGPACK_OBJECT_STR ||
        !safe_name(n->via.str.ptr, n->via.str.size))
      continue;
    const char *val = v ? scalar(v, buf, sizeof buf, &len) : "";
    env_set(e, n->via.str.ptr, n->via.str.size, val, v ? len : 0);
  }
  const msgpack_object *m = bus_obj_get(d, "env");
  for (uint32_t i = 0;
       m && m->type == MSGPACK_OBJECT_MAP && i < m->via.map.size; i++) {
    const msgpack_object_kv *kv = &m->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR ||
        !safe_name(kv->key.via.str.ptr, kv->key.via.str.size))
      continue;
    const char *val = scalar(&kv->val, buf, sizeof buf, &len);
    if (!memchr(val, 0, len))
      env_set(e, kv->key.via.str.ptr, kv->key.via.str.size, val, len);
  }
  char gpus[256] = "";
  size_t used = 0;
  const msgpack_object *g = bus_obj_get(d, "gpus");
  for (uint32_t i = 0;
       g && g->type == MSGPACK_OBJECT_ARRAY && i < g->via.array.size; i++)
    if (g->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
        used + 8 < sizeof gpus)
      used += (size_t)snprintf(gpus + used, sizeof gpus - used, "%s%llu",
                               used ? "," : "",
                               (unsigned long long)g->via.array.ptr[i].via.u64);
  env_sets(e, "CUDA_VISIBLE_DEVICES", gpus);
  env_devices(e, bus_obj_get(d, "devices"), p->a->cfg.node);
  env_sets(e, "LARK_POD", p->pod);
  env_sets(e, "LARK_NODE", p->a->cfg.node);
  if (p->job[0])
    env_sets(e, "LARK_JOB", p->job);
  snprintf(buf, sizeof buf, "%u", p->attempt);
  env_sets(e, "LARK_ATTEMPT", buf);
  env_sets(e, "LARK_SOCKET", p->sock_path);
}

static void
arg_add(edge_args *b, const char *s, size_t len) {
  if (b->n + 2 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 32;
    char **g = realloc(b->v, cap * sizeof *g);
    if (!g) {
      b->failed = 1;
      return;
    }
    b->v = g;
    b->cap = cap;
  }
  if (!(b->v[b->n] = strndup(s, len)))
    b->failed = 1;
  else
    b->v[++b->n] = NULL;
}

static void
arg_str(edge_args *b, const char *s) {
  arg_add(b, s, strlen(s));
}

static void
arg_obj(edge_args *b, const char *opt, const msgpack_object *o) {
  if (!o || o->type != MSGPACK_OBJECT_STR || !o->via.str.size)
    return;
  if (opt)
    arg_str(b, opt);
  arg_add(b, o->via.str.ptr, o->via.str.size);
}

void
edge_args_free(edge_args *b) {
  for (size_t i = 0; i < b->n; i++)
    free(b->v[i]);
  free(b->v);
}

/* `lark-edge pod-shim STATUS [options] -- ARGV`: the entrypoint, or
 * /bin/sh -c runScript when entry is NULL (shim.c). */
int
edge_shim_argv(const edge_proc *p, const msgpack_object *d,
               const msgpack_object *entry, const char *status,
               const char *netns, edge_args *b) {
  const edge_config *c = &p->a->cfg;
  const msgpack_object *art = bus_obj_get(bus_obj_get(d, "raw"), "artifact");
  char num[32];
  arg_str(b, p->a->self_exe);
  arg_str(b, "pod-shim");
  arg_str(b, status);
  if (p->netns) { /* the file's path: the shim's environment is the pod's */
    arg_str(b, "--netns");
    arg_str(b, netns);
  }
  if (art && art->type == MSGPACK_OBJECT_STR && art->via.str.size) {
    arg_obj(b, "--artifact", art);
    if (c->artifact_ca && *c->artifact_ca) {
      arg_str(b, "--ca");
      arg_str(b, c->artifact_ca);
    }
    snprintf(num, sizeof num, "%llu", (unsigned long long)c->artifact_max);
    arg_str(b, "--max");
    arg_str(b, num);
    snprintf(num, sizeof num, "%d", c->artifact_timeout_s);
    arg_str(b, "--timeout");
    arg_str(b, num);
  }
  arg_obj(b, "--prepare", bus_obj_get(d, "prepareScript"));
  arg_str(b, "--");
  if (entry)
    for (uint32_t i = 0; i < entry->via.array.size; i++)
      arg_add(b, entry->via.array.ptr[i].via.str.ptr,
              entry->via.array.ptr[i].via.str.size);
  else {
    arg_str(b, "/bin/sh");
    arg_str(b, "-c");
    arg_obj(b, NULL, bus_obj_get(d, "runScript"));
  }
  return b->failed ? -ENOMEM : 0;
}

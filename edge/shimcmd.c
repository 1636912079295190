/*
 * shimcmd.c - the pod shim's command line and environment, and the
 * status file it leaves (shimcmd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "shimcmd.h"
#include "utf8.h"

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
  if (bus_grow(&e->v, e->n + 1, &e->cap, sizeof *e->v, 64)) { /* and NULL */
    free(kv);
    return;
  }
  e->v[e->n++] = kv;
  e->v[e->n] = NULL;
}

static void
env_sets(edge_env *e, const char *name, const char *val) {
  env_set(e, name, strlen(name), val, strlen(val));
}

void
edge_env_put(edge_env *e, const char *name, const char *val) {
  env_sets(e, name, val);
}

void
edge_env_free(edge_env *e) {
  for (size_t i = 0; i < e->n; i++)
    free(e->v[i]);
  free(e->v);
}

/* A value as text into buf. */
static const char *
scalar(const bus_value *v, char *buf, size_t cap, size_t *len) {
  switch (v->kind) {
  case BUS_V_STR:
    *len = v->as.s.len;
    return v->as.s.len ? v->as.s.ptr : "";
  case BUS_V_INT:
    snprintf(buf, cap, "%lld", (long long)v->as.i);
    break;
  case BUS_V_UINT:
    snprintf(buf, cap, "%llu", (unsigned long long)v->as.u);
    break;
  case BUS_V_FLOAT:
    snprintf(buf, cap, "%g", v->as.f);
    break;
  case BUS_V_BOOL:
    snprintf(buf, cap, "%s", v->as.b ? "true" : "false");
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

/* What a pod holding its bound devices is told (edge/README.md,
 * "Devices"): each kind's switch and controller socket, the one robot's
 * ROS setting when it holds exactly one, and the names. */
typedef struct held {
  int kinds[3]; /* by edge_dev_kind */
  int robots;
  const edge_device *robot; /* the last robot */
  char names[32 * 72];
  size_t used;
} held;

static void
hold(held *h, const edge_device *dev) {
  char name[80];
  h->kinds[dev->kind] = 1;
  if (dev->kind != EDGE_DEV_CAMERA) {
    h->robots++;
    h->robot = dev;
  }
  if (edge_dev_bound_name(dev, name, sizeof name))
    return;
  int n = snprintf(h->names + h->used, sizeof h->names - h->used, "%s%s",
                   h->used ? "," : "", name);
  if (n > 0 && h->used + (size_t)n < sizeof h->names)
    h->used += (size_t)n;
}

static void
env_devices(edge_env *e, edge_proc *p, const bus_str_list *bound) {
  static const char *const on[3] = {"RLINF_EMBODIED_ROS_ENABLED",
                                    "RLINF_EMBODIED_ROS2_ENABLED",
                                    "RLINF_EMBODIED_CAMERA_ENABLED"};
  static const char *const path[3] = {"RLINF_EMBODIED_ROS_SOCKET_PATH",
                                      "RLINF_EMBODIED_ROS2_SOCKET_PATH",
                                      "RLINF_EMBODIED_CAMERA_SOCKET_PATH"};
  held h = {0};
  for (uint32_t i = 0; i < bound->n; i++) {
    char name[80];
    snprintf(name, sizeof name, "%.*s", (int)bound->v[i].len,
             bound->v[i].len ? bound->v[i].ptr : "");
    const edge_device *dev = edge_devices_bound(&p->a->devices, name);
    if (dev)
      hold(&h, dev);
    else
      edge_logf("warn", p->pod, "bound to %s, which this node does not have",
                name);
  }
  for (int k = 0; k < 3; k++) {
    char sock[EDGE_DEV_PATH_SZ];
    if (!h.kinds[k] || edge_dev_socket_path(p->a->cfg.data, (edge_dev_kind)k,
                                            sock, sizeof sock))
      continue;
    env_sets(e, on[k], "true");
    env_sets(e, path[k], sock);
  }
  const edge_device *r = h.robots == 1 ? h.robot : NULL;
  char num[16];
  if (r && r->kind == EDGE_DEV_ROS && r->ros_master_uri[0])
    env_sets(e, "ROS_MASTER_URI", r->ros_master_uri);
  if (r && r->kind == EDGE_DEV_ROS2 && r->ros_domain_id >= 0) {
    snprintf(num, sizeof num, "%d", r->ros_domain_id);
    env_sets(e, "ROS_DOMAIN_ID", num);
  }
  if (h.used)
    env_sets(e, "LARK_DEVICES", h.names);
}

/* Variables of the agent's own environment a pod does not inherit: the
 * agent's settings, and the device family, which only the node's
 * devices set (env_devices). */
static int
inherited(const char *kv) {
  static const char *const not [] = {"LARK_", "NATS_", "RLINF_EMBODIED_",
                                     "ROS_MASTER_URI=", "ROS_DOMAIN_ID="};
  for (size_t i = 0; i < sizeof not / sizeof not [0]; i++)
    if (!strncmp(kv, not [i], strlen(not [i])))
      return 0;
  return 1;
}

void
edge_env_inherit(edge_env *e) {
  for (char **v = environ; v && *v; v++)
    if (inherited(*v)) {
      const char *eq = strchr(*v, '=');
      if (eq)
        env_set(e, *v, (size_t)(eq - *v), eq + 1, strlen(eq + 1));
    }
}

/* Environment: the agent's (without its own LARK_ and NATS settings and
 * the device family), raw.environment, the message's env map, then what
 * the node knows. */
void
edge_shim_env(edge_proc *p, const bus_ev_pod_desired *d, edge_env *e) {
  char buf[64];
  size_t len;
  edge_env_inherit(e);
  const bus_env_var_list *ev = &d->raw.environment; /* empty when absent */
  for (uint32_t i = 0; i < ev->n; i++) {
    bus_str n = ev->v[i].name, v = ev->v[i].value;
    if (safe_name(n.ptr, n.len))
      env_set(e, n.ptr, n.len, v.len ? v.ptr : "", v.len);
  }
  for (uint32_t i = 0; i < d->env.n; i++) {
    const bus_value *kv = &d->env.v[i];
    if (!safe_name(kv->key.ptr, kv->key.len))
      continue;
    const char *val = scalar(kv, buf, sizeof buf, &len);
    if (!memchr(val, 0, len))
      env_set(e, kv->key.ptr, kv->key.len, val, len);
  }
  char gpus[256] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < d->gpus.n; i++)
    if (used + 8 < sizeof gpus)
      used +=
          (size_t)snprintf(gpus + used, sizeof gpus - used, "%s%llu",
                           used ? "," : "", (unsigned long long)d->gpus.v[i]);
  env_sets(e, "CUDA_VISIBLE_DEVICES", gpus);
  env_devices(e, p, &d->boundDevices);
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
  if (bus_grow(&b->v, b->n + 1, &b->cap, sizeof *b->v, 32)) { /* and NULL */
    b->failed = 1;
    return;
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
arg_bstr(edge_args *b, const char *opt, bus_str s) {
  if (!s.len)
    return;
  if (opt)
    arg_str(b, opt);
  arg_add(b, s.ptr, s.len);
}

void
edge_args_add(edge_args *b, const char *s) {
  arg_str(b, s);
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
edge_shim_argv(const edge_proc *p, const bus_ev_pod_desired *d,
               const char *status, const char *netns, edge_args *b) {
  const edge_config *c = &p->a->cfg;
  const bus_raw_runtime *raw = &d->raw; /* zero when absent */
  char num[32];
  arg_str(b, p->a->self_exe);
  arg_str(b, "pod-shim");
  arg_str(b, status);
  if (p->netns) { /* the file's path: the shim's environment is the pod's */
    arg_str(b, "--netns");
    arg_str(b, netns);
  }
  if (raw->artifact.len) {
    arg_bstr(b, "--artifact", raw->artifact);
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
  arg_bstr(b, "--prepare", d->prepareScript);
  arg_str(b, "--");
  if (raw->entrypoint.n)
    for (uint32_t i = 0; i < raw->entrypoint.n; i++)
      arg_add(b, raw->entrypoint.v[i].len ? raw->entrypoint.v[i].ptr : "",
              raw->entrypoint.v[i].len);
  else {
    arg_str(b, "/bin/sh");
    arg_str(b, "-c");
    arg_bstr(b, NULL, d->runScript);
  }
  return b->failed ? -ENOMEM : 0;
}

int
edge_shim_status(const char *path, int *code, int *sig, char *why, size_t cap) {
  why[0] = 0;
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  int n = fscanf(f, "%d %d", code, sig);
  if (n == 2 && fgetc(f) == '\n' && fgets(why, (int)cap, f)) {
    why[strcspn(why, "\n")] = 0;
    edge_utf8_fix(why, strlen(why));
  }
  fclose(f);
  return n == 2 ? 0 : -1;
}

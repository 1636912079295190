/*
 * shimcmd.h - private to edge/: what the pod shim is started with, from
 * the pod's desired state: its command line and its environment; and
 * how it ended, from its status file (shimcmd.c). Pure: it reads the
 * process record, the agent's configuration and that file, and changes
 * nothing.
 */
#ifndef LARK_EDGE_SHIMCMD_H
#define LARK_EDGE_SHIMCMD_H

#include "proc.h"

/* An environment: NULL-terminated "NAME=value" strings, each owned. */
typedef struct edge_env {
  char **v;
  size_t n, cap;
} edge_env;

/* A command line, every string owned. */
typedef struct edge_args {
  char **v;
  size_t n, cap;
  int failed;
} edge_args;

/* Environment: the agent's (without its own LARK_ and NATS settings),
 * raw.environment, the desired state d's env map, then what the node
 * knows (devices, LARK_POD, LARK_SOCKET, ...). */
void edge_shim_env(edge_proc *p, const bus_ev_pod_desired *d, edge_env *e);
void edge_env_free(edge_env *e);
/* The agent's environment without its own LARK_ and NATS_ settings and
 * the device family (RLINF_EMBODIED_*, ROS_MASTER_URI, ROS_DOMAIN_ID). */
void edge_env_inherit(edge_env *e);
/* Set name=val (replacing an earlier value). */
void edge_env_put(edge_env *e, const char *name, const char *val);

/* `lark-edge pod-shim STATUS [options] -- ARGV`: the entrypoint, or
 * /bin/sh -c runScript when it has none (shim.c); netns is the
 * namespace's file when p->netns. -ENOMEM when memory ran out. */
int edge_shim_argv(const edge_proc *p, const bus_ev_pod_desired *d,
                   const char *status, const char *netns, edge_args *b);
/* Append a copy of s (b->failed when memory ran out). */
void edge_args_add(edge_args *b, const char *s);
void edge_args_free(edge_args *b);

/* What the shim wrote to its status file path: "<code> <signal>", then
 * the reason a step before ARGV failed, if one did (why, cap bytes; ""
 * else). 0 when found. */
int edge_shim_status(const char *path, int *code, int *sig, char *why,
                     size_t cap);

#endif

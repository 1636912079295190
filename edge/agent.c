/*
 * agent.c - the agent's wiring: the store, the broker connection (the
 * node's credentials, inbox prefix _INBOX_<node>), the registration, the
 * adoption of what a previous agent left running, the loop and its two
 * threads (agent.h). The top of edge/: it calls the parts below and ties
 * the one upward call (a process that ended, to pods.c) with a hook.
 *
 * The agent starts without the broker (the connection retries in the
 * background): pods run from the store's desired states, reports queue.
 * On SIGINT/SIGTERM it stops the threads and closes its handles; the
 * pods keep running in their own sessions and are adopted next time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "camera_run.h"
#include "engine.h"
#include "engine_sock.h"
#include "fetch.h"
#include "lifetime.h"
#include "log.h"
#include "netns.h"
#include "output.h"
#include "pods.h"
#include "robot.h"
#include "sender.h"
#include "slice.h"
#include "weights.h"

void
edge_config_init(edge_config *c) {
  memset(c, 0, sizeof *c);
  c->cluster = "local";
  c->labels = "";
  c->capacity = "";
  c->devices = "";
  c->runtimes = "raw";
  c->url = "nats://127.0.0.1:4222";
  c->artifact_max = EDGE_ARTIFACT_MAX_DEFAULT;
  c->artifact_timeout_s = EDGE_ARTIFACT_TIMEOUT_DEFAULT;
  c->heartbeat_ms = EDGE_HEARTBEAT_MS;
  c->slice_wait_ms = EDGE_SLICE_WAIT_MS;
  c->grace_ms = 10000;
  c->log_flush_ms = 200;
  c->log_lines = 512;
  c->js_wait_ms = 2000;
  c->weights_keep = 3;
  c->weights_max = (uint64_t)8 << 30;
}

static void
on_wake(uv_async_t *h) {
  edge_agent *a = h->data;
  if (atomic_exchange(&a->dirty, 0)) {
    edge_pods_reconcile(a);
    edge_robots_reconcile(a->robots);
  }
  edge_engine_on_wake(a);
}

/*
 * The node's seed is read again for each connect (libbus conn.c): once
 * it is gone (the node deleted, its key removed with it) every reconnect
 * fails before it reaches the broker, and nats.c tries again and again
 * without a word. So it is looked at every 2 s, and said once when it
 * goes and once when it is back.
 */
static void
look_at_creds(edge_agent *a) {
  if (!a->cfg.creds || bus_mono_ms() - a->creds_looked_ms < 2000)
    return;
  a->creds_looked_ms = bus_mono_ms();
  int gone = access(a->cfg.creds, R_OK) != 0, why = errno;
  if (gone && !a->creds_gone)
    edge_logf("error", "-",
              "cannot read the node's credentials %s (%s): every connect "
              "to the broker fails until they are back, and is tried "
              "again meanwhile; was node %s deleted, or its seed moved?",
              a->cfg.creds, strerror(why), a->cfg.node);
  else if (!gone && a->creds_gone)
    edge_logf("info", "-", "the node's credentials %s can be read again",
              a->cfg.creds);
  a->creds_gone = gone;
}

static void
on_flush(uv_timer_t *t) {
  edge_agent *a = t->data;
  edge_output_flush_all(a);
  look_at_creds(a);
  if (!a->conn_lost && a->conn && bus_conn_closed(a->conn)) {
    /* nats.c gave up (credentials refused twice): exit non-zero, so the
     * supervisor starts a fresh agent, which re-adopts the pods */
    edge_logf("error", "-", "the broker connection closed for good: %s",
              bus_conn_last_error(a->conn)); /* refused: the key is gone */
    a->conn_lost = 1;
    uv_stop(a->loop);
  }
}

static void
on_signal(uv_signal_t *s, int sig) {
  edge_agent *a = s->data;
  edge_logf("info", "-", "signal %d: stopping (pods keep running)", sig);
  uv_stop(a->loop);
}

static int
register_node(edge_agent *a) {
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = edge_node_resource(&a->cfg, &sb);
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object o;
  bus_field_err errs[4];
  int n = 0;
  if (!rc && msgpack_unpack(sb.data, sb.size, NULL, &z, &o) >= 0 &&
      (rc = bus_schema_check("node.registered", &o, errs, 4, &n)))
    rc = bus_error(rc, "the node's description is refused: %s: %s",
                   errs[0].path, errs[0].reason);
  if (!rc) /* in through the node's ingress, with its heartbeats */
    rc = bus_subj_node_heartbeat(subject, sizeof subject, a->cfg.node);
  edge_msg m = {subject, "node.registered", sb.data, sb.size};
  if (!rc)
    rc = edge_send(a, &m);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
connect_broker(edge_agent *a) {
  char inbox[EDGE_NAME_SZ + 16], name[EDGE_NAME_SZ + 16];
  snprintf(inbox, sizeof inbox, "_INBOX_%s", a->cfg.node);
  snprintf(name, sizeof name, "lark-edge-%s", a->cfg.node);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = a->cfg.url;
  o.creds = a->cfg.creds;
  o.inbox_prefix = inbox;
  o.name = name;
  o.js_wait_ms = a->cfg.js_wait_ms;
  o.retry_on_failed_connect = 1;
  int rc = bus_conn_open(&a->conn, &o);
  if (rc)
    edge_logf("error", "-", "connect %s: %s (%s)", a->cfg.url, bus_strerror(rc),
              bus_last_error());
  return rc;
}

/* The runtimes offered: raw+netns with a pod CIDR (which needs root),
 * never without one. */
static int
runtimes(edge_agent *a) {
  edge_config *c = &a->cfg;
  uint32_t base;
  int plen;
  snprintf(a->runtimes, sizeof a->runtimes, "%s", c->runtimes);
  c->runtimes = a->runtimes;
  if (!c->pod_cidr || !*c->pod_cidr) {
    c->pod_cidr = NULL;
    if (edge_runtime_offered(c, "raw+netns"))
      return bus_error(BUS_EINVAL, "runtime raw+netns needs --pod-cidr");
    return 0;
  }
  int rc = edge_cidr_parse(c->pod_cidr, &base, &plen);
  if (rc)
    return rc;
  if (geteuid() != 0)
    return bus_error(-EPERM, "--pod-cidr (runtime raw+netns) needs root: "
                             "pods get network namespaces and veths");
  if (!edge_runtime_offered(c, "raw+netns")) {
    size_t n = strlen(a->runtimes);
    snprintf(a->runtimes + n, sizeof a->runtimes - n, "%sraw+netns",
             n ? "," : "");
  }
  return 0;
}

static int
prepare(edge_agent *a, const edge_config *cfg) {
  char path[4200];
  a->cfg = *cfg;
  a->pod_ended = edge_pods_reconcile_one;
  a->sock_op = edge_engine_sock_op;
  a->sock_cancel = edge_engine_sock_cancel;
  if (cfg->devfile) { /* taken over: the agent frees it */
    a->devices = *cfg->devfile;
    *cfg->devfile = (edge_devices){0};
  }
  a->cfg.devfile = &a->devices;
  int rc = runtimes(a);
  if (rc)
    return rc;
  ssize_t n = readlink("/proc/self/exe", a->self_exe, sizeof a->self_exe - 1);
  if (n <= 0)
    return bus_error(-errno, "cannot find my own executable");
  a->self_exe[n] = 0;
  if (!bus_name_valid(cfg->node, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "invalid node name %s", cfg->node);
  if (!cfg->data)
    return bus_error(BUS_EINVAL, "--data is required");
  mkdir(cfg->data, 0700);
  snprintf(a->pods_dir, sizeof a->pods_dir, "%s/pods", cfg->data);
  mkdir(a->pods_dir, 0700);
  snprintf(path, sizeof path, "%s/sock", cfg->data);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/store", cfg->data);
  return edge_store_open(&a->store, path);
}

static void
close_walk(uv_handle_t *h, void *ud) {
  (void)ud;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void
shutdown_agent(edge_agent *a) {
  edge_cameras_stop(a); /* before the connection and the threads */
  edge_weights_stop(a); /* no callback to a pod's socket from here on */
  edge_pushes_stop(a);  /* nor to the store */
  atomic_store(&a->stop, 1);
  edge_sender_wake(a);
  /* the slice thread may be in a pull the broker holds for up to
   * --slice-wait: closing the connection ends it now (queued messages
   * stay queued; nothing sent is lost) */
  bus_conn_shutdown(a->conn);
  if (a->slice_started)
    pthread_join(a->slice_th, NULL);
  if (a->sender_started)
    pthread_join(a->sender_th, NULL);
  edge_output_flush_all(a);
  edge_procs_close(a);
  if (a->robots)
    edge_robot_socks_close(a->robots);
  edge_robots_close(a->robots);
  uv_close((uv_handle_t *)&a->wake, NULL);
  uv_close((uv_handle_t *)&a->flush, NULL);
  for (int i = 0; i < 2; i++)
    uv_close((uv_handle_t *)&a->sigs[i], NULL);
  uv_run(a->loop, UV_RUN_DEFAULT);
  uv_walk(a->loop, close_walk, NULL);
  uv_run(a->loop, UV_RUN_DEFAULT);
  uv_loop_close(a->loop);
  edge_cameras_free(a); /* no frame is being made any more */
}

static int
start_thread(pthread_t *th, int *started, void *(*fn)(void *), edge_agent *a,
             const char *what) {
  int rc = pthread_create(th, NULL, fn, a);
  if (rc)
    return bus_error(-rc, "cannot start the %s thread", what);
  *started = 1;
  return 0;
}

int
edge_agent_run(const edge_config *cfg) {
  edge_agent *a = calloc(1, sizeof *a);
  if (!a)
    return -ENOMEM;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  pthread_mutex_init(&a->changes_mu, NULL);
  int rc = prepare(a, cfg);
  if (rc) {
    edge_logf("error", "-", "%s", bus_last_error());
    goto out;
  }
  a->loop = uv_default_loop();
  uv_async_init(a->loop, &a->wake, on_wake);
  a->wake.data = a;
  uv_timer_init(a->loop, &a->flush);
  a->flush.data = a;
  uv_timer_start(&a->flush, on_flush, (uint64_t)a->cfg.log_flush_ms,
                 (uint64_t)a->cfg.log_flush_ms);
  int sigs[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; i++) {
    uv_signal_init(a->loop, &a->sigs[i]);
    a->sigs[i].data = a;
    uv_signal_start(&a->sigs[i], on_signal, sigs[i]);
  }
  if ((rc = register_node(a))) {
    edge_logf("error", "-", "%s", bus_last_error());
    uv_stop(a->loop);
  } else {
    edge_procs_adopt(a);
    edge_net_sweep(a);
    edge_pods_reconcile(a);
    if ((rc = edge_robots_open(a, &a->devices, &a->robots)) ||
        (a->robots && (rc = edge_robot_socks_open(a->robots))))
      edge_logf("error", "-", "robots: %s", bus_last_error());
    edge_robots_reconcile(a->robots);
    if (!rc && !(rc = connect_broker(a)) &&
        !(rc = start_thread(&a->slice_th, &a->slice_started, edge_slice_main, a,
                            "slice")))
      rc = start_thread(&a->sender_th, &a->sender_started, edge_sender_main, a,
                        "sender");
    if (!rc)
      edge_pushes_start(a);
    if (!rc && (rc = edge_cameras_start(a)))
      edge_logf("error", "-", "%s", bus_last_error());
    if (!rc && (rc = edge_weights_start(a)))
      edge_logf("error", "-", "weights: %s", bus_last_error());
    edge_logf("info", "-", "node %s running (data %s, runtimes %s%s%s)",
              a->cfg.node, a->cfg.data, a->cfg.runtimes,
              a->cfg.pod_cidr ? ", pod CIDR " : "",
              a->cfg.pod_cidr ? a->cfg.pod_cidr : "");
    if (a->devices.n)
      edge_logf("info", "-", "%d devices from %s", a->devices.n,
                a->cfg.device_file ? a->cfg.device_file : "the device file");
    if (!rc)
      uv_run(a->loop, UV_RUN_DEFAULT);
  }
  shutdown_agent(a);
  if (!rc && a->conn_lost)
    rc = bus_error(BUS_ECONN, "the broker connection closed");
out:
  bus_conn_close(a->conn);
  edge_robots_free(a->robots);
  edge_store_close(a->store);
  free(a->changes);
  edge_devices_free(&a->devices);
  pthread_cond_destroy(&a->cv);
  pthread_mutex_destroy(&a->mu);
  pthread_mutex_destroy(&a->changes_mu);
  free(a);
  return rc;
}

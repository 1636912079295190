/*
 * uvfleet.c - bench_uvfleet, simulated edge nodes by the thousand in one
 * process: every node has its own broker connection under its own nkey
 * user (<creds>/creds/<node>.nk) and inbox prefix _INBOX_<node>, all on
 * one libuv loop (nats.c's libuv adapter, bus_conn_loop): no thread per
 * node, one descriptor per node. bench_fleet_idle and bench_fleet_storm
 * start several of these.
 *
 * --mode edge: each node does on the wire what an idle lark-edge does
 * (edge/agent.c, edge/sender.c, edge/slice.c, libbus consumer.c):
 * registers (node.registered on its ingress; sent again with its id every
 * 30 s until its stream exists, as an unacked queued message would be),
 * opens its slice consumer edge-<node> on LARK_NODE_<node> (retried after
 * 1 s doubling to 16 s until the scheduler made the stream), then keeps
 * one pull request held open (batch 1000, --expiry-ms, as libbus held.c
 * holds it) and sends the next as soon as one ends, asks for the
 * consumer's info after --check-ms of empty pulls, and sends a
 * node.heartbeat every --heartbeat-ms (lark-edge's defaults unless
 * given: edge.h, bus.h); and listens on its push subject
 * (lark.push.<node>.>), where desired states come ahead of the stream.
 * --mode core: each node only subscribes to its device subjects
 * (lark.dev.<node>.>, which its user may read) with core NATS: the floor.
 * --got DIR: each desired state a node gets is written to DIR/got-<first>
 * as "d <job> <stored ns> <got ns>" (its Job, the node stream's stored
 * time from the delivery's ack subject, the wall clock at its arrival),
 * each one pushed ahead of the stream as "p <job> <got ns>" (not counted
 * in got=: a run ends when the stored copies are in), and each core message on
 * _INBOX_<node>.f (the gang floor: its body the sender's wall clock) as "f
 * <sent ns> <got ns>"; flushed before each progress line, so a line's got=
 * count is on file (bench_fleet_gang).
 *
 * Timed work runs on the loop (one 50 ms sweep over the nodes); answers
 * arrive on nats.c's delivery threads, which publish the next pull at
 * once. Every second it prints a line the parent reads:
 *   tick conn=C cons=K pulls=P hb=H got=G err=E
 * (connected, consumer open (so registered: the scheduler made its
 * stream), pulls ended, heartbeats sent, messages got, failures). SIGTERM ends
 * it at once.
 *
 *   bench_uvfleet --url URL --creds DIR --first I --count N
 *                 [--mode edge|core] [--heartbeat-ms H] [--expiry-ms E]
 *                 [--check-ms C] [--got DIR] [--cpu N]
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nats/adapters/libuv.h>

#include "bench.h"
#include "bus.h"
#include "edge.h"

enum { CONNECTING, REGISTERING, PULLING };

typedef struct sim_node {
  char name[24], stream[64], inbox[48];
  bus_conn *c;
  atomic_int state;
  atomic_llong pull_at;   /* mono ms the next pull is due (0: waiting) */
  atomic_llong pull_sent; /* mono ms the waiting pull went */
  int64_t next_hb, next_check, next_reg, next_open;
  int open_wait;   /* ms before the next open: 1 s doubling to 16 s */
  char reg_id[33]; /* the registration's id, kept as lark-edge's queue does */
} sim_node;

static struct {
  const char *url, *creds, *mode;
  int first, count, core;
  int hb_ms, expiry_ms, check_ms;
  int cpu; /* the capacity each node registers: cpu, 2 GiB a core */
  const char *got_dir;
  FILE *got_f; /* fully buffered; stdio's lock orders the threads */
  sim_node *nodes;
  int next; /* the next node to connect */
  bus_conn_loop loop;
  atomic_long conn, cons, pulls, hb, got, err;
} F;

static void
pub(sim_node *n, const char *subject, const char *reply, const char *body) {
  if (bus_conn_publish_reply(n->c, subject, reply, body, strlen(body)))
    atomic_fetch_add(&F.err, 1);
}

/* One pull request, as a slice's held pull sends it (libbus held.c:
 * HELD_BATCH, the reader's wait): open across messages, ended by the
 * broker at its expiry or when its batch is used up. */
static void
pull(sim_node *n) {
  char subject[160], reply[64], body[96];
  snprintf(subject, sizeof subject, "$JS.API.CONSUMER.MSG.NEXT.%s.edge-%s",
           n->stream, n->name);
  snprintf(reply, sizeof reply, "%s.p", n->inbox);
  snprintf(body, sizeof body, "{\"batch\":1000,\"expires\":%lld}",
           (long long)F.expiry_ms * 1000000LL);
  atomic_store(&n->pull_at, 0);
  atomic_store(&n->pull_sent, bus_mono_ms());
  pub(n, subject, reply, body);
}

/* The slice consumer, with bus_slice's settings (libbus consumer.c). */
static void
open_consumer(sim_node *n) {
  char subject[200], reply[64], body[512];
  snprintf(subject, sizeof subject,
           "$JS.API.CONSUMER.CREATE.%s.edge-%s.lark.node.%s.>", n->stream,
           n->name, n->name);
  snprintf(reply, sizeof reply, "%s.c", n->inbox);
  snprintf(body, sizeof body,
           "{\"stream_name\":\"%s\",\"config\":{\"durable_name\":\"edge-%s\","
           "\"name\":\"edge-%s\",\"deliver_policy\":\"last_per_subject\","
           "\"ack_policy\":\"all\",\"ack_wait\":30000000000,"
           "\"max_ack_pending\":20000,\"filter_subject\":\"lark.node.%s.>\","
           "\"replay_policy\":\"instant\",\"mem_storage\":true}}",
           n->stream, n->name, n->name, n->name);
  pub(n, subject, reply, body);
}

static void
append_event(sim_node *n, bus_type t, const void *typed, const char *id) {
  char subject[BUS_SUBJECT_MAX];
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .t = t,
                  .typed = typed,
                  .type = bus_type_name(t),
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = n->name,
                  .cause = ""};
  if (bus_subj_node_heartbeat(subject, sizeof subject, n->name) ||
      bus_append_async(n->c, subject, &ev, BUS_APPEND_NOCHECK))
    atomic_fetch_add(&F.err, 1);
}

/* node.registered with what lark-edge describes by default (8 cores and
 * 16 GiB; --cpu gives more), and the node.heartbeat of a node running
 * nothing. */
static void
register_node(sim_node *n) {
  bus_node_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                    .kind = BUS_STR("Node"),
                    .metadata.name = bus_str_of(n->name),
                    .spec = {.cluster = BUS_STR("local"),
                             .capacity = {.has_cpu = 1,
                                          .cpu = F.cpu,
                                          .has_memory = 1,
                                          .memory = 2048 * F.cpu}}};
  if (!n->reg_id[0])
    bus_event_new_id(n->reg_id);
  append_event(n, BUS_T_NODE_REGISTERED, &r, n->reg_id);
}

static void
heartbeat(sim_node *n) {
  bus_ev_node_heartbeat d = {.has_pods = 1, .pods = 0};
  char id[33];
  bus_event_new_id(id);
  append_event(n, BUS_T_NODE_HEARTBEAT, &d, id);
  atomic_fetch_add(&F.hb, 1);
}

/* The stored time of a delivery, from its ack subject
 * $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ns>.<pending>
 * (or with <domain>.<account hash> after ACK and a token at the end). */
static long long
ack_stored_ns(const char *reply) {
  const char *tok[13];
  int n = 0;
  for (const char *p = reply; n < 13; p++) {
    tok[n++] = p;
    if (!(p = strchr(p, '.')))
      break;
  }
  int at = n == 9 ? 7 : (n == 11 || n == 12) ? 9 : -1;
  return at < 0 ? 0 : atoll(tok[at]);
}

/* The Job an event's data names into job ("-" when none). */
static void
event_job(const void *data, size_t len, char job[32]) {
  msgpack_zone zone;
  bus_event ev;
  snprintf(job, 32, "-");
  msgpack_zone_init(&zone, 2048);
  if (!bus_event_decode(data, len, &ev, &zone))
    bus_obj_str(&ev.data, "job", job, 32);
  msgpack_zone_destroy(&zone);
}

/* A desired state's Job and times, or a floor message's, to --got. */
static void
note_got(const char *reply, const void *data, size_t len, int64_t now) {
  char job[32];
  if (!reply) {
    char sent[24] = "";
    snprintf(sent, sizeof sent, "%.*s", (int)(len < 23 ? len : 23),
             (const char *)data);
    fprintf(F.got_f, "f %lld %lld\n", atoll(sent), (long long)now);
    return;
  }
  event_job(data, len, job);
  fprintf(F.got_f, "d %s %lld %lld\n", job, ack_stored_ns(reply),
          (long long)now);
}

/* A desired state pushed ahead of its stream, to --got. */
static void
note_push(const void *data, size_t len, int64_t now) {
  char job[32];
  event_job(data, len, job);
  fprintf(F.got_f, "p %s %lld\n", job, (long long)now);
}

/* Desired states (delivered on the pull's inbox under their own subject,
 * with an ack subject as reply: each acked, as lark-edge acks), answers
 * on _INBOX_<node>.{c,p,i}, pushes and core deliveries, on nats.c's delivery
 * thread. */
static void
on_msg(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  sim_node *n = ud;
  int64_t now = bus_wall_ns();
  (void)c;
  if (!strncmp(subject, BUS_NODE_PUSH_PREFIX,
               sizeof BUS_NODE_PUSH_PREFIX - 1)) {
    if (F.got_f)
      note_push(data, len, now);
    return;
  }
  size_t k = strlen(subject);
  char what = k > 2 && subject[k - 2] == '.' ? subject[k - 1] : 0;
  if (reply && !strncmp(reply, "$JS.ACK.", 8)) { /* a desired state */
    bus_conn_publish(n->c, reply, "+ACK", 4);
    if (F.got_f)
      note_got(reply, data, len, now);
    atomic_fetch_add(&F.got, 1);
  } else if (F.core || strncmp(subject, "_INBOX_", 7)) {
    atomic_fetch_add(&F.got, 1);
  } else if (what == 'f' && F.got_f) { /* the floor */
    note_got(NULL, data, len, now);
    atomic_fetch_add(&F.got, 1);
  } else if (what == 'c') { /* the consumer, or why not */
    if (memmem(data, len, "\"error\"", 7))
      return; /* no stream yet: the sweep asks again */
    if (atomic_exchange(&n->state, PULLING) != PULLING) {
      atomic_fetch_add(&F.cons, 1);
      pull(n);
    }
  } else if (what == 'p' && len == 0 && !reply) { /* a pull ended */
    atomic_fetch_add(&F.pulls, 1);
    int64_t held = bus_mono_ms() - atomic_load(&n->pull_sent);
    if (held >= F.expiry_ms / 2) {
      pull(n);
    } else { /* refused at once (no consumer, 503): as a failed fetch */
      atomic_fetch_add(&F.err, 1);
      atomic_store(&n->pull_at, bus_mono_ms() + 1000);
    }
  }
}

static int
connect_node(sim_node *n) {
  char creds[512], sub[80];
  snprintf(creds, sizeof creds, "%s/creds/%s.nk", F.creds, n->name);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = F.url;
  o.creds = creds;
  o.inbox_prefix = n->inbox;
  o.name = n->name;
  o.loop = &F.loop;
  /* an ack written by the delivery thread that has it, not handed to the
   * loop: a node on a machine of its own costs the broker's machine
   * nothing, so the simulation takes what it must of it and no more */
  o.send_asap = 1;
  if (bus_conn_open(&n->c, &o))
    return -1;
  if (F.core)
    snprintf(sub, sizeof sub, "lark.dev.%s.>", n->name);
  else
    snprintf(sub, sizeof sub, "%s.>", n->inbox);
  bus_serve *s;
  if (!F.core) {
    char push[80];
    snprintf(push, sizeof push, BUS_NODE_PUSH_PREFIX "%s.>", n->name);
    if (bus_conn_serve(n->c, push, NULL, on_msg, n, &s))
      return -1;
  }
  return bus_conn_serve(n->c, sub, NULL, on_msg, n, &s) ? -1 : 0;
}

/* Connect nodes for up to 20 ms of the loop's time. */
static void
connect_some(int64_t now) {
  while (F.next < F.count && bus_mono_ms() - now < 20) {
    sim_node *n = &F.nodes[F.next];
    if (connect_node(n)) {
      atomic_fetch_add(&F.err, 1);
      return; /* this one again on the next sweep */
    }
    F.next++;
    atomic_fetch_add(&F.conn, 1);
    atomic_store(&n->state, REGISTERING);
    /* the first beat at once, as lark-edge's; the fleet's beats spread
     * over the period, as nodes started apart would */
    n->next_hb = now + (int64_t)F.hb_ms * (F.next - 1) / F.count;
    n->next_reg = n->next_open = now;
    n->open_wait = 1000;
  }
}

static void
sweep_node(sim_node *n, int64_t now) {
  int st = atomic_load(&n->state);
  if (st == CONNECTING || F.core)
    return;
  if (now >= n->next_hb) {
    n->next_hb = now + F.hb_ms;
    heartbeat(n);
  }
  if (st == REGISTERING) {
    if (now >= n->next_reg) { /* again, same id: its ack may have been lost */
      n->next_reg = now + 30000;
      register_node(n);
    }
    if (now >= n->next_open) { /* as edge/slice.c retries */
      n->next_open = now + n->open_wait;
      n->open_wait = n->open_wait < 16000 ? n->open_wait * 2 : 16000;
      open_consumer(n);
    }
    return;
  }
  int64_t due = atomic_load(&n->pull_at);
  if (due && now >= due)
    pull(n);
  else if (!due && now - atomic_load(&n->pull_sent) > F.expiry_ms + 5000)
    pull(n); /* its answer was lost: as nats.c's fetch timing out */
  if (now >= n->next_check) {
    char subject[160], reply[64];
    n->next_check = now + F.check_ms;
    snprintf(subject, sizeof subject, "$JS.API.CONSUMER.INFO.%s.edge-%s",
             n->stream, n->name);
    snprintf(reply, sizeof reply, "%s.i", n->inbox);
    pub(n, subject, reply, "");
  }
}

static void
on_sweep(uv_timer_t *t) {
  (void)t;
  int64_t now = bus_mono_ms();
  connect_some(now);
  for (int i = 0; i < F.next; i++)
    sweep_node(&F.nodes[i], now);
}

static void
on_tick(uv_timer_t *t) {
  (void)t;
  if (F.got_f)
    fflush(F.got_f);
  printf("tick conn=%ld cons=%ld pulls=%ld hb=%ld got=%ld err=%ld\n",
         atomic_load(&F.conn), atomic_load(&F.cons), atomic_load(&F.pulls),
         atomic_load(&F.hb), atomic_load(&F.got), atomic_load(&F.err));
  fflush(stdout);
}

static void
on_term(int sig) {
  (void)sig;
  _exit(0); /* the broker sees the connections go */
}

static void
init_nodes(void) {
  if (!(F.nodes = calloc((size_t)F.count, sizeof *F.nodes)))
    bench_die("nodes", "out of memory");
  for (int i = 0; i < F.count; i++) {
    sim_node *n = &F.nodes[i];
    snprintf(n->name, sizeof n->name, "n%d", F.first + i);
    snprintf(n->inbox, sizeof n->inbox, "_INBOX_%s", n->name);
    if (bus_node_stream_name(n->name, n->stream, sizeof n->stream) < 0)
      bench_die("stream name", bus_last_error());
    /* spread the periodic work over the period, as nodes started apart */
    n->next_check = bus_mono_ms() + F.check_ms * (int64_t)i / F.count;
  }
}

static void
open_got(void) {
  char path[600];
  snprintf(path, sizeof path, "%s/got-%d", F.got_dir, F.first);
  if (!(F.got_f = fopen(path, "w")) || setvbuf(F.got_f, NULL, _IOFBF, 1 << 20))
    bench_die("--got", path);
}

int
main(int argc, char **argv) {
  F.mode = "edge", F.hb_ms = EDGE_HEARTBEAT_MS;
  F.expiry_ms = EDGE_SLICE_WAIT_MS, F.check_ms = BUS_CONSUMER_CHECK_MS;
  F.cpu = 8;
  const bench_opt opts[] = {{"--url", .s = &F.url},
                            {"--creds", .s = &F.creds},
                            {"--first", .i = &F.first},
                            {"--count", .i = &F.count},
                            {"--mode", .s = &F.mode},
                            {"--heartbeat-ms", .i = &F.hb_ms},
                            {"--expiry-ms", .i = &F.expiry_ms},
                            {"--check-ms", .i = &F.check_ms},
                            {"--got", .s = &F.got_dir},
                            {"--cpu", .i = &F.cpu},
                            {NULL}};
  if (bench_opts(argc, argv, opts) || !F.url || !F.creds || F.count < 1 ||
      F.hb_ms < 1 || F.cpu < 1 || F.expiry_ms < 10 || F.check_ms < 1 ||
      (strcmp(F.mode, "edge") && strcmp(F.mode, "core")))
    bench_die("usage", "bench_uvfleet --url URL --creds DIR --first I "
                       "--count N [--mode edge|core] [--heartbeat-ms H] "
                       "[--expiry-ms E] [--check-ms C] [--got DIR] "
                       "[--cpu N]");
  F.core = !strcmp(F.mode, "core");
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGTERM, on_term);
  signal(SIGPIPE, SIG_IGN);
  init_nodes();
  if (F.got_dir)
    open_got();
  uv_loop_t *loop = uv_default_loop();
  nats_SetMessageDeliveryPoolSize(2); /* before the first connection */
  natsLibuv_Init();
  natsLibuv_SetThreadLocalLoop(loop);
  F.loop =
      (bus_conn_loop){loop, (bus_fn)natsLibuv_Attach, (bus_fn)natsLibuv_Read,
                      (bus_fn)natsLibuv_Write, (bus_fn)natsLibuv_Detach};
  uv_timer_t sweep, tick;
  uv_timer_init(loop, &sweep);
  uv_timer_init(loop, &tick);
  uv_timer_start(&sweep, on_sweep, 0, 50);
  uv_timer_start(&tick, on_tick, 1000, 1000);
  return uv_run(loop, UV_RUN_DEFAULT);
}

/*
 * bed.h - what most service tests start from, for Criterion tests: a
 * broker with the platform's streams and a temporary directory, the
 * services started there, the fields they describe, a node's ingress,
 * pods' desired states, lark-devices' rows, and a `larkctl up` platform.
 * Each call fails the test when it cannot do its part, so it is a library
 * of its own (larkbed), linked only into the test executables.
 */
#ifndef LARK_TEST_BED_H
#define LARK_TEST_BED_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "bus.h"
#include "deploy.h"
#include "natsd.h"
#include "platform.h"

/* lt_broker_up(srv, conn, dedupe_ms) and lt_tmpdir(dir, cap, tag). */
void lt_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
               const char *tag, int dedupe_ms);

/* The end of it: SIGTERM and reap each of the n pids still > 0 (set to
 * 0), close conn, stop the broker and remove dir (kept when LARK_KEEP is
 * set). */
void lt_bed_down(lt_natsd *srv, bus_conn *conn, const char *dir, pid_t *pids,
                 int n);

/* lt_start_service of bin_name with --data dir/<data>, its output in
 * dir/<log> and the NULL-terminated extra arguments (may be NULL). */
pid_t lt_must_start(const char *bin_name, const char *url, const char *dir,
                    const char *data, const char *log,
                    const char *const extra[]);

/* lt_start_named_service: --data dir/<name>, --name name, dir/<name>.log. */
pid_t lt_must_start_named(const char *bin_name, const char *url,
                          const char *dir, const char *name);

/*
 * A broker with the accounts larkctl makes: credentials in dir for each
 * of the NULL-terminated names with its role (names must hold "admin"),
 * the broker's config from them, admin's connection (conn) and the
 * platform's streams (dedupe 2 s).
 */
void lt_secure_bed_up(lt_natsd *srv, bus_conn **conn, const char *dir,
                      const char *const names[], const lark_role roles[]);

/*
 * The platform of the edge tests, with the accounts larkctl makes:
 * credentials in dir for admin, lark-scheduler and each of the
 * NULL-terminated nodes, a broker with those accounts, admin's connection
 * (conn) with the platform's streams (dedupe 2 s), and lark-scheduler
 * under its own credentials (--data dir/scheduler). Its pid.
 */
pid_t lt_edge_bed_up(lt_natsd *srv, bus_conn **conn, const char *dir,
                     const char *const nodes[]);

/* lt_bed_up(srv, conn, dir, cap, tag, 1000) and lark-scheduler started
 * there (lt_must_start_named "scheduler"): the bed of a test of the
 * scheduler alone, its nodes and commands written by the test. Its pid. */
pid_t lt_sched_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
                      const char *tag);

/*
 * A Criterion suite of tests of the scheduler alone, each between
 * lt_sched_bed_up (tmpdir tagged tag) and lt_bed_down; it defines, static
 * in the test file, srv (the broker), conn (the connection), dir and
 * sched (lark-scheduler's pid).
 */
#define LT_SCHED_SUITE(suite, tag)                                             \
  static lt_natsd srv;                                                         \
  static bus_conn *conn;                                                       \
  static char dir[256];                                                        \
  static pid_t sched;                                                          \
  static void suite##_up(void) {                                               \
    sched = lt_sched_bed_up(&srv, &conn, dir, sizeof dir, tag);                \
  }                                                                            \
  static void suite##_down(void) {                                             \
    lt_bed_down(&srv, conn, dir, &sched, 1);                                   \
  }                                                                            \
  TestSuite(suite, .init = suite##_up, .fini = suite##_down, .timeout = 120)

/*
 * lt_bed_up(srv, conn, dir, cap, tag, 2000), node's own stream (as the
 * scheduler makes it when it takes the node's registration) and a durable
 * consumer of everything the node sends on its ingress (lark.in.<node>.>)
 * into reports: the bed of a test of one lark-edge without the scheduler.
 */
void lt_node_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
                    const char *tag, const char *node, bus_consumer **reports);

/*
 * Fetch up to max events of k, waiting up to timeout_ms for the first,
 * call fn(ev, ud) on each that decodes, then ack them all.
 */
void lt_drain(bus_consumer *k, size_t max, int timeout_ms,
              void (*fn)(const bus_event *ev, void *ud), void *ud);

/* lt_bed_down of the bed above: the n pids first (the agent), then
 * reports, conn, the broker and dir. */
void lt_node_bed_down(lt_natsd *srv, bus_conn *conn, bus_consumer *reports,
                      const char *dir, pid_t *pids, int n);

/* The pod.reports a node sent, as a test of the node reads them. */
typedef struct lt_pod_report {
  char pod[128], phase[32], ip[64], reason[1024]; /* ip: localIP */
  uint32_t attempt;
} lt_pod_report;
typedef struct lt_pod_reports {
  lt_pod_report seen[256];
  int n;
} lt_pod_reports;

/* ev into r when it is a pod.report and r has room. */
void lt_pod_report_take(lt_pod_reports *r, const bus_event *ev);

/* The first report of pod in phase in r, calling drain(250) (the test's:
 * it reads the node's ingress into r) between looks for up to seconds;
 * NULL, said in the test's log, when there was none. */
const lt_pod_report *lt_pod_report_wait(lt_pod_reports *r,
                                        void (*drain)(int timeout_ms),
                                        const char *pod, const char *phase,
                                        int seconds);

/* The pod.reports k holds (lt_drain, waiting up to timeout_ms for the
 * first) into r. */
void lt_pod_reports_read(lt_pod_reports *r, bus_consumer *k, int timeout_ms);

/* lt_pod_report_wait, reading k between looks. */
const lt_pod_report *lt_pod_report_await(lt_pod_reports *r, bus_consumer *k,
                                         const char *pod, const char *phase,
                                         int seconds);

/* Every phase r holds for pod, in the order reported, joined by spaces,
 * into out; out. */
const char *lt_pod_phases(const lt_pod_reports *r, const char *pod, char *out,
                          size_t cap);

/* The last lines of dir/file, logged as errors (what a process said
 * before a test failed); nothing when the file is missing. */
void lt_log_tail(const char *dir, const char *file, int lines);

/*
 * lark-edge as node: --url url, --data dir/<node>, its output in
 * dir/<node>.log, --creds its credentials in dir (with_creds) or none,
 * --heartbeat 0.5 --grace 1, then the NULL-terminated extra arguments
 * (at most 23).
 */
pid_t lt_must_start_edge(const char *url, const char *dir, const char *node,
                         int with_creds, const char *const extra[]);

/*
 * pod.desired for pod on node, as the scheduler writes it (job j, task
 * j-a): attempt, desired (Running, Stopped, Deleted), runtime; when
 * Running, the raw entrypoint argv and the bound devices as boundDevices
 * (both NULL-terminated; bound NULL: none).
 */
void lt_pod_desire(bus_conn *conn, const char *node, const char *pod,
                   uint32_t attempt, const char *desired, const char *runtime,
                   const char *const argv[], const char *const bound[]);

/* lt_pod_desire Running, raw, attempt 0, `sh -c script`. */
void lt_pod_running(bus_conn *conn, const char *node, const char *pod,
                    const char *script, const char *const *bound);

/*
 * The JSON object a test pod wrote at path (tests/data/camera_pod.py's
 * result.json), waited for up to seconds: fails the test when it is not
 * there, is not JSON, or names a "fatal" error. json_decref it.
 */
json_t *lt_pod_result(const char *path, int seconds);

/* A field of lark-devices' row of device node/name (its `device get`), as
 * text: a string or a count; "" when the row or the field is not there. */
void lt_device_field(bus_conn *conn, const char *node, const char *name,
                     const char *key, char *out, size_t cap);

/* Wait up to seconds for that field to be want; 1 when it was, 0 (what
 * it was in the test's log) when not. */
int lt_device_becomes(bus_conn *conn, const char *node, const char *name,
                      const char *key, const char *want, int seconds);

/*
 * lt_platform_init(p, tag) and lt_platform_start(p, extra, 60) without
 * LARK_URL, LARK_CREDS or LARK_USER from the test's environment (larkctl
 * finds the platform by its --data): fails the test unless it is ready.
 */
void lt_platform_ready(lt_platform *p, const char *tag,
                       const char *const extra[]);

/* lt_platform_ready with LARKBUS_HOME the source tree, where an example's
 * pods find its scripts (examples/). */
void lt_example_ready(lt_platform *p, const char *tag,
                      const char *const extra[]);

/* The source tree: LARK_SOURCE_DIR, "." when it is not set. */
const char *lt_source_dir(void);

/* `larkctl apply -f path` on p, tried again every 100 ms for up to
 * seconds while it fails (right after "ready" the services may still be
 * starting and the edges not yet registered: apply refuses a runtime no
 * registered node offers); fails the test with larkctl's last output. */
void lt_platform_apply(const lt_platform *p, const char *path, int seconds);

/* A Job name of one pod running /bin/sh -c script (no single quote in
 * it) with retries, written under p's directory and applied
 * (lt_platform_apply). */
void lt_platform_sh_job(const lt_platform *p, const char *name,
                        const char *script, int retries);

/* lt_platform_stop, then lt_platform_remove. */
void lt_platform_end(lt_platform *p);

/* A broker with the platform's streams (dedupe 2 s), a batch, and the
 * sample body {"text": "hello"}: what the consumer and reader tests read
 * and write with. */
typedef struct lt_fixture {
  lt_natsd s;
  bus_conn *c;
  bus_batch *b;
  msgpack_sbuffer data;
} lt_fixture;
void lt_fixture_up(lt_fixture *f);
void lt_fixture_down(lt_fixture *f);

/*
 * Replay view from the streams into a fresh copy and compare it with the
 * live one, up to tries times 200 ms apart until they match: expects that
 * they do, and with same_seq that the replay ended where the live view
 * is.
 */
void lt_expect_replay(bus_conn *c, const char *view, int tries, int same_seq);

/* View d opened in dir, live (effects 1: decide runs) or for replay
 * (effects 0), the options' defaults otherwise. */
bus_view *lt_must_open_view(const bus_view_def *d, const char *dir,
                            int effects);

/* Where lt_field looks for kind's fields: in "job" for a Job (its
 * describe answers {job, tasks}), else in the result itself. */
const char *lt_sub_of(const char *kind);

/* lt_wait_field; when the field never became want, what it was goes to
 * the test's log. 1 when it did, 0 when not. */
int lt_field_becomes(bus_conn *c, const char *kind, const char *sub,
                     const char *name, const char *key, const char *want,
                     int seconds);

/*
 * What node sends through its ingress, as lark-edge does: an event of
 * type with data on lark.in.<node>.sched.<what>, a fresh id, actor node,
 * appended without the version check.
 */
void lt_ingress(bus_conn *c, const char *node, const char *type,
                const char *what, const msgpack_sbuffer *data);

/* The ts (ns) of pod's first pod.phase Running in LARK_EVENTS, read to
 * its end; 0 when there is none. Fails the test when it cannot read. */
int64_t lt_pod_running_ts(bus_conn *c, const char *pod);

/* A pod.report of pod's phase from node through lt_ingress, as lark-edge
 * sends it: {pod, phase, attempt, localIP (when local_ip is not NULL)}. */
void lt_pod_says(bus_conn *c, const char *node, const char *pod,
                 uint32_t attempt, const char *phase, const char *local_ip);

#endif

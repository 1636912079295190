/*
 * test_edge_prepare.c - a task's artifact, prepareScript and runScript,
 * run by real lark-edge agents beside a real lark-scheduler and broker:
 * file://, http:// (python3 -m http.server on loopback) and https://
 * (openssl s_server -WWW, with a CA made here and trusted by one node
 * only) artifacts reach the entrypoint; a wrong sha256, a 404, a refused
 * connection, a missing file, an untrusted server and a node's size limit
 * fail the pod with a reason naming the cause, and nothing of the pod
 * runs then; a prepareScript prepares or fails the pod; a runScript runs
 * when there is no entrypoint; job.apply refuses malformed artifacts and
 * a task with nothing to run.
 *
 * Two nodes: edge-1 (label ca=yes) trusts the test's CA; edge-2 (ca=no)
 * does not, and takes artifacts of at most 1 KiB.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deploy.h"
#include "files.h"
#include "bed.h"
#include "cmd_check.h"
#include "natsd.h"
#include "ports.h"
#include "proc.h"
#include "secure.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t sched, edges[2], server;
static const char content[] = "weights v1\n";

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
sh(const char *fmt, ...) {
  char out[4096], err[4096];
  va_list ap;
  va_start(ap, fmt);
  int rc = lt_vsh(out, sizeof out, err, sizeof err, fmt, ap);
  va_end(ap);
  if (rc)
    cr_log_error("sh failed (%d): %s", rc, err);
  return rc;
}

static pid_t
start_edge(int i) {
  char node[32], ca[512];
  snprintf(node, sizeof node, "edge-%d", i + 1);
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  const char *extra[] = {"--capacity",
                         "cpu=16,memory=16Gi",
                         "--labels",
                         i ? "ca=no" : "ca=yes",
                         i ? "--artifact-max" : "--artifact-ca",
                         i ? "1Ki" : ca,
                         NULL};
  return lt_must_start_edge(srv.url, dir, node, 1, extra);
}

/* A throwaway CA and a server certificate for 127.0.0.1 signed by it. */
static void
make_ca(void) {
  cr_assert_eq(
      sh("cd %s && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
         "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
         "-nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=lark-test-ca "
         "2>/dev/null && "
         "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
         "-keyout srv.key -out srv.csr -subj /CN=127.0.0.1 2>/dev/null && "
         "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
         "-CAcreateserial -out srv.pem -days 1 -extfile san.ext 2>/dev/null",
         dir),
      0);
}

static void
setup(void) {
  const char *nodes[] = {"edge-1", "edge-2", NULL};
  lt_tmpdir(dir, sizeof dir, "edgeprep");
  sched = lt_edge_bed_up(&srv, &conn, dir, nodes);
  make_ca();
  /* what the servers serve: www/model.txt, and 2 KiB in www/big.bin */
  cr_assert_eq(sh("mkdir -p %s/www && printf '%s' > %s/www/model.txt && "
                  "head -c 2048 /dev/zero > %s/www/big.bin",
                  dir, content, dir, dir),
               0);
  edges[0] = start_edge(0);
  edges[1] = start_edge(1);
}

static void
teardown(void) {
  pid_t pids[] = {server, edges[0], edges[1], sched};
  lt_bed_down(&srv, conn, dir, pids, 4);
}

TestSuite(edge_prepare, .init = setup, .fini = teardown, .timeout = 150);

/* ------------------------------------------------------------ helpers */

/* Serve DIR/www on a free loopback port: plain http (python3), or https
 * with the test CA's server certificate (openssl s_server -WWW). */
static int
serve(int tls) {
  char cmd[1024], log[512];
  int port = lt_free_port();
  snprintf(log, sizeof log, "%s/server.log", dir);
  if (tls)
    snprintf(cmd, sizeof cmd,
             "cd %s/www && exec openssl s_server -quiet -WWW -accept "
             "127.0.0.1:%d -cert ../srv.pem -key ../srv.key",
             dir, port);
  else
    snprintf(cmd, sizeof cmd,
             "exec python3 -m http.server --bind 127.0.0.1 --directory "
             "%s/www %d",
             dir, port);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
  server = lt_spawn(argv, log);
  cr_assert(server > 0);
  cr_assert(port > 0 && lt_wait_port(port, 10), "no server on port %d (see %s)",
            port, log);
  return port;
}

/* Apply a Job of one task; task is the JSON of the task's other fields
 * (runtime and scripts), job the JSON of other spec fields (may be "").
 * The pod lands on edge-1, or edge-2 when node2. Returns the reply's
 * error message ("" when it was taken) in msg. */
static void
apply(const char *name, int node2, const char *job, const char *task, char *msg,
      size_t cap) {
  char text[16384];
  snprintf(text, sizeof text,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{%s%s"
           "\"tasks\":[{\"name\":\"a\",\"role\":\"Actor\","
           "\"nodeSelector\":{\"ca\":\"%s\"},"
           "\"resources\":{\"cpu\":1,\"memory\":64},%s}]}}}",
           name, job, job[0] ? "," : "", node2 ? "no" : "yes", task);
  json_error_t e;
  json_t *body = json_loads(text, 0, &e);
  cr_assert_not_null(body, "bad test json: %s: %s", e.text, text);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = lt_must_command_json(conn, "job", "apply", body, &z);
  msg[0] = 0;
  const msgpack_object *err = bus_obj_get(&r, "error");
  if (err) {
    const msgpack_object *d = bus_obj_get(err, "details");
    bus_obj_str(err, "message", msg, cap);
    if (d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size) {
      size_t n = strlen(msg);
      snprintf(msg + n, cap - n, " | ");
      bus_obj_str(&d->via.array.ptr[0], "reason", msg + n + 3, cap - n - 3);
    }
  }
  msgpack_zone_destroy(&z);
}

static void
must_apply(const char *name, int node2, const char *job, const char *task) {
  char msg[512];
  apply(name, node2, job, task, msg, sizeof msg);
  cr_assert_str_empty(msg, "job %s refused: %s", name, msg);
}

/* Wait for pod's phase to be want (up to seconds); its reason in why. */
static int
pod_ends(const char *pod, const char *want, char *why, size_t cap) {
  char got[64] = "";
  int ok =
      lt_wait_field(conn, "pod", NULL, pod, "phase", want, 40, got, sizeof got);
  lt_field(conn, "pod", NULL, pod, "reason", why, cap);
  if (!ok) {
    cr_log_error("pod %s is %s, not %s (reason: %s)", pod, got, want, why);
    lt_log_tail(dir, "scheduler.log", 15);
    lt_log_tail(dir, "edge-1.log", 15);
    lt_log_tail(dir, "edge-2.log", 15);
  }
  return ok;
}

static char *
slurp(const char *name) {
  static char buf[4096];
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return lt_read_file(path, buf, sizeof buf);
}

/* A raw runtime whose entrypoint copies file to DIR/<out>. */
static void
cat_task(char *buf, size_t cap, const char *artifact, const char *file,
         const char *out) {
  snprintf(buf, cap,
           "\"runtime\":{\"raw\":{\"artifact\":\"%s\",\"entrypoint\":"
           "[\"sh\",\"-c\",\"cat %s > %s/%s\"]}}",
           artifact, file, dir, out);
}

static const char *
sha256_of(const char *file) {
  static char hex[65];
  char out[256], err[256];
  cr_assert_eq(
      lt_sh(out, sizeof out, err, sizeof err, "sha256sum %s/www/%s", dir, file),
      0, "%s", err);
  snprintf(hex, sizeof hex, "%.64s", out);
  return hex;
}

/* ------------------------------------------------------------- tests */

Test(edge_prepare, file_and_http_artifacts_reach_the_entrypoint_or_fail_it) {
  char t[2048], url[1024], why[512];
  int port = serve(0), closed = lt_free_port();
  cr_assert_gt(closed, 0);
  snprintf(url, sizeof url, "file://%s/www/model.txt", dir);
  cat_task(t, sizeof t, url, "model.txt", "fileart.out");
  must_apply("fileart", 0, "", t);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/model.txt#sha256=%s", port,
           sha256_of("model.txt"));
  cat_task(t, sizeof t, url, "model.txt", "httpart.out");
  must_apply("httpart", 0, "", t);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/model.txt#sha256=%064d", port,
           0);
  cat_task(t, sizeof t, url, "model.txt", "badsum.ran");
  must_apply("badsum", 0, "", t);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/nope.txt", port);
  cat_task(t, sizeof t, url, "nope.txt", "missing.ran");
  must_apply("missing", 0, "", t);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/model.txt", closed);
  cat_task(t, sizeof t, url, "model.txt", "refused.ran");
  must_apply("refused", 0, "", t);
  snprintf(url, sizeof url, "file://%s/www/absent.txt", dir);
  cat_task(t, sizeof t, url, "absent.txt", "nofile.ran");
  must_apply("nofile", 0, "", t);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/big.bin", port);
  cat_task(t, sizeof t, url, "big.bin", "big.ran");
  must_apply("big", 1, "", t); /* edge-2: at most 1 KiB */

  cr_assert(pod_ends("fileart-a-0", "Succeeded", why, sizeof why));
  cr_expect_str_eq(slurp("fileart.out"), content);
  cr_assert(pod_ends("httpart-a-0", "Succeeded", why, sizeof why));
  cr_expect_str_eq(slurp("httpart.out"), content);
  cr_expect(pod_ends("badsum-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "sha256 mismatch") &&
                strstr(why, sha256_of("model.txt")),
            "%s", why);
  cr_expect(pod_ends("missing-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "cannot fetch artifact") && strstr(why, "404"), "%s",
            why);
  cr_expect(pod_ends("refused-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "cannot fetch artifact") &&
                strstr(why, "Failed to connect"),
            "%s", why);
  cr_expect(pod_ends("nofile-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "cannot fetch artifact") && strstr(why, "absent.txt"),
            "%s", why);
  cr_expect(pod_ends("big-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "limit of 1024 bytes"), "%s", why);
  const char *never[] = {"badsum.ran", "missing.ran", "refused.ran",
                         "nofile.ran", "big.ran"};
  for (size_t i = 0; i < sizeof never / sizeof *never; i++)
    cr_expect_null(slurp(never[i]), "%s: the entrypoint ran", never[i]);
}

Test(edge_prepare, https_artifacts_need_the_node_ca) {
  char t[2048], url[1024], why[512];
  int port = serve(1);
  snprintf(url, sizeof url, "https://127.0.0.1:%d/model.txt", port);
  cat_task(t, sizeof t, url, "model.txt", "tls.out");
  must_apply("tlsok", 0, "", t);
  cr_assert(pod_ends("tlsok-a-0", "Succeeded", why, sizeof why));
  cr_expect_str_eq(slurp("tls.out"), content);
  cat_task(t, sizeof t, url, "model.txt", "untrusted.ran");
  must_apply("tlsno", 1, "", t); /* edge-2 does not trust the CA */
  cr_assert(pod_ends("tlsno-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "cannot fetch artifact") && strstr(why, "certificate"),
            "%s", why);
  cr_expect_null(slurp("untrusted.ran"));
}

Test(edge_prepare, apply_refuses_bad_artifacts_and_tasks_with_nothing_to_run) {
  char msg[512];
  apply("s3", 0, "",
        "\"runtime\":{\"raw\":{\"artifact\":\"s3://b/a.tgz\","
        "\"entrypoint\":[\"true\"]}}",
        msg, sizeof msg);
  cr_expect(strstr(msg, "must be a file://, http:// or https:// URL"), "%s",
            msg);
  apply("md5", 0, "",
        "\"runtime\":{\"raw\":{\"artifact\":\"http://h/a.tgz#md5=00\","
        "\"entrypoint\":[\"true\"]}}",
        msg, sizeof msg);
  cr_expect(strstr(msg, "#sha256=<64 hex digits>"), "%s", msg);
  apply("dirurl", 0, "",
        "\"runtime\":{\"raw\":{\"artifact\":\"https://h/d/\","
        "\"entrypoint\":[\"true\"]}}",
        msg, sizeof msg);
  cr_expect(strstr(msg, "must end in a file name"), "%s", msg);
  apply("idle", 0, "", "\"runtime\":{\"raw\":{\"entrypoint\":[]}}", msg,
        sizeof msg);
  cr_expect(strstr(msg, "no entrypoint and no runScript"), "%s", msg);
}

Test(edge_prepare, prepare_and_run_scripts) {
  char t[4096], url[1024], why[512];
  /* the artifact is there for the prepareScript, which prepares what the
   * entrypoint reads, and prints to the pod's log */
  snprintf(url, sizeof url, "file://%s/www/model.txt", dir);
  snprintf(t, sizeof t,
           "\"prepareScript\":\"test -s model.txt && cp model.txt staged.txt "
           "&& echo prepared\","
           "\"runtime\":{\"raw\":{\"artifact\":\"%s\",\"entrypoint\":"
           "[\"sh\",\"-c\",\"cat staged.txt > %s/prep.out\"]}}",
           url, dir);
  must_apply("prep", 0, "", t);
  snprintf(t, sizeof t,
           "\"prepareScript\":\"echo starting; echo broken setup >&2; exit 4\","
           "\"runtime\":{\"raw\":{\"entrypoint\":"
           "[\"sh\",\"-c\",\"touch %s/prepfail.ran\"]}}",
           dir);
  must_apply("prepfail", 0, "", t);
  /* no entrypoint: the runScript, with the task's environment */
  snprintf(t, sizeof t,
           "\"runScript\":\"echo \\\"$GREETING from $LARK_POD\\\" > "
           "%s/runscript.out\","
           "\"runtime\":{\"raw\":{\"environment\":"
           "[{\"name\":\"GREETING\",\"value\":\"hi there\"}]}}",
           dir);
  must_apply("runscript", 0, "", t);
  /* the Job's runScript for a task that gives none, after the Job's
   * prepareScript */
  snprintf(url, sizeof url,
           "\"prepareScript\":\"echo job-prep > p.txt\","
           "\"runScript\":\"cat p.txt > %s/jobrun.out\"",
           dir);
  must_apply("jobrun", 0, url, "\"runtime\":{\"raw\":{\"entrypoint\":[]}}");

  cr_assert(pod_ends("prep-a-0", "Succeeded", why, sizeof why));
  cr_expect_str_eq(slurp("prep.out"), content);
  cr_assert(pod_ends("prepfail-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "prepareScript failed: exit status 4: broken setup"),
            "%s", why);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event ev;
  cr_assert_eq(
      bus_last_event(conn, "LARK_EVENTS", "lark.ev.pod.prepfail-a-0", &ev, &z),
      0, "%s", bus_last_error());
  cr_expect_eq(bus_obj_int(&ev.data, "exitCode", -2), 4,
               "the prepareScript's exit code");
  msgpack_zone_destroy(&z);
  cr_expect_null(slurp("prepfail.ran"), "the entrypoint ran");
  cr_assert(pod_ends("runscript-a-0", "Succeeded", why, sizeof why));
  cr_expect_str_eq(slurp("runscript.out"), "hi there from runscript-a-0\n");
  cr_assert(pod_ends("jobrun-a-0", "Succeeded", why, sizeof why));
  cr_expect_str_eq(slurp("jobrun.out"), "job-prep\n");
}

Test(edge_prepare, a_failed_prepare_is_reported_by_the_agent_that_readopts) {
  char t[2048], why[512], got[64];
  snprintf(t, sizeof t,
           "\"prepareScript\":\"sleep 2; echo gave up >&2; exit 5\","
           "\"runtime\":{\"raw\":{\"entrypoint\":"
           "[\"sh\",\"-c\",\"touch %s/slowprep.ran\"]}}",
           dir);
  must_apply("slowprep", 0, "", t);
  cr_assert(pod_ends("slowprep-a-0", "Running", why, sizeof why));
  /* the agent goes while the shim prepares; the next one adopts it */
  lt_kill(edges[0], SIGTERM);
  edges[0] = start_edge(0);
  cr_assert(pod_ends("slowprep-a-0", "Failed", why, sizeof why));
  cr_expect(strstr(why, "prepareScript failed: exit status 5: gave up"), "%s",
            why);
  lt_field(conn, "pod", NULL, "slowprep-a-0", "attempt", got, sizeof got);
  cr_expect_str_eq(got, "0", "started once");
  cr_expect_null(slurp("slowprep.ran"), "the entrypoint ran");
}

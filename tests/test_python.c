/*
 * test_python.c - libbus/python/larkbus.py and examples/train.py.
 *
 * Outside a pod, larkbus.emit runs the real larkctl against a real broker
 * and the report lands in LARK_RUNS through lark-reports. Inside a pod it
 * speaks the socket protocol of its docstring to a listener played by this
 * test: the exact line sent, "ok" accepted, "error: ..." raised. The example
 * Job manifest is valid against the schema, and the example script runs to the
 * end.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "manifest.h"
#include "natsd.h"
#include "proc.h"

static char dir[256];

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "python");
}

static void
teardown(void) {
  lt_rmtree(dir);
}

TestSuite(python, .init = setup, .fini = teardown, .timeout = 120);

static const char *
src_dir(void) {
  const char *s = getenv("LARK_SOURCE_DIR");
  return s ? s : ".";
}

/* python3 -c "<import larkbus>; <code>" with stdout/stderr captured. */
static int
python(const char *code, char *out, size_t cap, char *err, size_t errcap) {
  char prog[4096];
  snprintf(prog, sizeof prog,
           "import sys; sys.path.insert(0, '%s/libbus/python'); "
           "import larkbus\n%s",
           src_dir(), code);
  char *argv[] = {(char *)"/usr/bin/env", (char *)"python3", (char *)"-c", prog,
                  NULL};
  return lt_run(argv, out, cap, err, errcap);
}

/* The run reports on lark.run.<job>: count, and the last one's data. */
static size_t
runs(bus_conn *c, const char *job, char *last, size_t cap) {
  char filter[128];
  snprintf(filter, sizeof filter, "lark.run.%s", job);
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_RUNS";
  o.filter = filter;
  bus_reader *r;
  bus_batch *b;
  cr_assert_eq(bus_batch_new(&b), 0);
  cr_assert_eq(bus_reader_open(c, &o, &r), 0, "%s", bus_last_error());
  size_t n = 0;
  int rc;
  do {
    rc = bus_reader_next(r, b, 5000);
    for (size_t i = 0; i < bus_batch_len(b); i++, n++) {
      const bus_event *ev = bus_batch_event(b, i);
      cr_assert_not_null(ev);
      cr_expect_str_eq(ev->type, "run.reported");
      const msgpack_object *v = bus_obj_get(&ev->data, "values");
      char kind[64] = "";
      bus_obj_str(&ev->data, "kind", kind, sizeof kind);
      snprintf(last, cap, "%s step=%lld", kind,
               (long long)bus_obj_int(v, "step", -1));
    }
  } while (rc == 0);
  bus_reader_close(r);
  bus_batch_free(b);
  return n;
}

/* The same once at least want have landed (lark-reports moves them
 * asynchronously), waiting up to 30 s. */
static size_t
runs_wait(bus_conn *c, const char *job, size_t want, char *last, size_t cap) {
  size_t n = 0;
  for (int i = 0; i < 300 && (n = runs(c, job, last, cap)) < want; i++)
    usleep(100 * 1000);
  return n;
}

Test(python, emit_outside_a_pod_runs_larkctl) {
  lt_natsd srv;
  bus_conn *c;
  cr_assert_eq(lt_natsd_start(&srv, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&srv, &c), 0);
  cr_assert_eq(lt_streams(c, 1000), 0, "%s", bus_last_error());
  char larkctl[512], out[4096], err[4096], last[128] = "";
  lt_bin("larkctl", larkctl, sizeof larkctl);
  setenv("LARK_URL", srv.url, 1);
  setenv("LARKCTL", larkctl, 1);
  unsetenv("LARK_SOCKET");
  unsetenv("LARK_JOB");
  char data[512], log[512];
  snprintf(data, sizeof data, "%s/reports", dir);
  snprintf(log, sizeof log, "%s/reports.log", dir);
  pid_t reports = lt_start_service("lark-reports", srv.url, data, log, NULL);
  cr_assert(reports > 0);
  int rc = python("larkbus.emit('metric', job='py-1', step=100, reward=0.5)",
                  out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  setenv("LARK_JOB", "py-1", 1);
  rc = python("larkbus.emit('progress', step=7, total=10)", out, sizeof out,
              err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_eq(runs_wait(c, "py-1", 2, last, sizeof last), 2);
  cr_expect_str_eq(last, "progress step=7");

  unsetenv("LARK_JOB");
  rc = python("larkbus.emit('metric', step=1)", out, sizeof out, err,
              sizeof err);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(err, "LarkError") && strstr(err, "LARK_JOB"), "%s", err);
  rc = python("larkbus.emit('Bad Kind', job='py-1', step=1)", out, sizeof out,
              err, sizeof err);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(err, "must be a name"), "%s", err);
  rc = python("larkbus.emit('metric', job='py-1', x=float('nan'))", out,
              sizeof out, err, sizeof err);
  cr_expect_neq(rc, 0);
  cr_expect(strstr(err, "LarkError"), "%s", err);
  cr_expect_eq(runs(c, "py-1", last, sizeof last), 2, "refused: not sent");

  /* the example script, outside a pod */
  char script[512];
  snprintf(script, sizeof script, "%s/examples/train.py", src_dir());
  setenv("LARK_JOB", "train-demo", 1);
  setenv("TRAIN_STEPS", "10", 1);
  setenv("TRAIN_SLEEP", "0", 1);
  char *argv[] = {(char *)"/usr/bin/env", (char *)"python3", script, NULL};
  rc = lt_run(argv, out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect(strstr(out, "step 10 loss") && strstr(out, "done: 10 steps"), "%s",
            out);
  cr_expect(strstr(err, "checkpoint at step 10"), "%s", err);
  cr_expect_eq(runs_wait(c, "train-demo", 30, last, sizeof last), 30);
  cr_expect_str_eq(last, "checkpoint step=10");
  lt_kill(reports, SIGTERM);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
}

/* A pod's socket, played by a thread: one connection, one line. */
typedef struct listener {
  int fd;
  char line[1024];
  const char *reply;
} listener;

static void *
serve_one(void *arg) {
  listener *l = arg;
  int c = accept(l->fd, NULL, NULL);
  if (c < 0)
    return NULL;
  size_t n = 0;
  while (n < sizeof l->line - 1) {
    ssize_t r = read(c, l->line + n, 1);
    if (r <= 0)
      break;
    if (l->line[n++] == '\n')
      break;
  }
  l->line[n] = 0;
  ssize_t w = write(c, l->reply, strlen(l->reply));
  (void)w;
  close(c);
  return NULL;
}

static void
pod_emit(const char *reply, const char *code, int *rc, char *line, char *err,
         size_t errcap) {
  char path[512], out[1024];
  snprintf(path, sizeof path, "%s/pod.sock", dir);
  unlink(path);
  listener l = {.reply = reply};
  l.fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(path), sizeof sa.sun_path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  cr_assert_eq(bind(l.fd, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(l.fd, 1), 0);
  pthread_t th;
  pthread_create(&th, NULL, serve_one, &l);
  setenv("LARK_SOCKET", path, 1);
  unsetenv("LARK_JOB");
  setenv("LARKCTL", "/nonexistent/larkctl", 1); /* never used in a pod */
  *rc = python(code, out, sizeof out, err, errcap);
  shutdown(l.fd, SHUT_RDWR);
  pthread_join(th, NULL);
  close(l.fd);
  strcpy(line, l.line);
}

Test(python, emit_inside_a_pod_speaks_the_socket_protocol) {
  char line[1024], err[4096];
  int rc;
  pod_emit("ok\n", "larkbus.emit('progress', step=3, total=10)", &rc, line, err,
           sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_str_eq(line, "{\"kind\":\"progress\",\"values\":{\"step\":3,"
                         "\"total\":10}}\n");

  pod_emit("ok\n", "larkbus.emit('metric', reward=0.5, note='a\\nb')", &rc,
           line, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_str_eq(line,
                   "{\"kind\":\"metric\",\"values\":{\"reward\":0.5,"
                   "\"note\":\"a\\nb\"}}\n",
                   "one line: newlines inside strings are escaped");

  pod_emit("error: pod is not running\n",
           "try:\n  larkbus.emit('metric', step=1)\n"
           "except larkbus.LarkError as e:\n  print(e, file=sys.stderr)\n"
           "  sys.exit(3)\n",
           &rc, line, err, sizeof err);
  cr_expect_eq(rc, 3, "an error reply raises LarkError");
  cr_expect(strstr(err, "pod is not running"), "%s", err);

  pod_emit("", "larkbus.emit('metric', step=1)", &rc, line, err, sizeof err);
  cr_expect_neq(rc, 0, "no reply is an error");
  cr_expect(strstr(err, "unexpected reply"), "%s", err);
}

Test(python, example_job_is_valid) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/examples/train-job.yaml", src_dir());
  lark_manifest m;
  memset(&m, 0, sizeof m);
  cr_assert_eq(lark_manifest_load(&m, path, err, sizeof err), 0, "%s", err);
  cr_assert_eq(m.ndocs, 1);
  bus_field_err errs[8];
  int n = 0;
  cr_expect_eq(lark_doc_check(&m.docs[0], errs, 8, &n), 0, "%s: %s",
               n ? errs[0].path : "", n ? errs[0].reason : "");
  lark_manifest_free(&m);
}

/*
 * test_python.c - libbus/python/larkbus.py and examples/train.py.
 *
 * Outside a pod, larkbus.emit speaks NATS itself against a real broker
 * and the report lands in LARK_RUNS through lark-reports: on an open
 * broker, and on one started with the config larkctl renders, as a user
 * signing in with its nkey, where thousands of reports from one script
 * land exactly once with that user as the actor, across a broker killed
 * and restarted mid-stream, and from a fork()ed child too. Inside a pod it
 * speaks the socket protocol of its docstring to a listener played by this
 * test: the exact line sent, "ok" accepted, "error: ..." raised at flush,
 * lines pipelined (all written before any answer). The example
 * Job manifest is valid against the schema, and the example script runs to the
 * end.
 *
 * It is one file over 600 lines because it is one subject, larkbus.emit,
 * outside a pod and inside one, and both halves drive larkbus.py through
 * the same python3 runner at its top.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "deploy.h"
#include "manifest.h"
#include "natsd.h"
#include "proc.h"
#include "stream.h"

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

/* python3 -c "<import larkbus>; <code>" with stdout/stderr captured. */
static int
python(const char *code, char *out, size_t cap, char *err, size_t errcap) {
  char prog[4096];
  snprintf(prog, sizeof prog,
           "import sys; sys.path.insert(0, '%s/libbus/python'); "
           "import larkbus\n%s",
           lt_source_dir(), code);
  char *argv[] = {(char *)"/usr/bin/env", (char *)"python3", (char *)"-c", prog,
                  NULL};
  return lt_run(argv, out, cap, err, errcap);
}

/* What runs() gathers: how many reports, and the last one's data. */
typedef struct run_count {
  size_t n;
  char *last;
  size_t cap;
} run_count;

/* Count a report, keep its kind and step. */
static void
count_run(const bus_event *ev, void *arg) {
  run_count *k = arg;
  k->n++;
  cr_expect_str_eq(ev->type, "run.reported");
  char kind[64] = "";
  bus_obj_str(&ev->data, "kind", kind, sizeof kind);
  int64_t step = bus_obj_int(bus_obj_get(&ev->data, "values"), "step", -1);
  snprintf(k->last, k->cap, "%s step=%lld", kind, (long long)step);
}

/* The run reports on lark.run.<job>: count, and the last one's data. */
static size_t
runs(bus_conn *c, const char *job, char *last, size_t cap) {
  run_count k = {0, last, cap};
  cr_assert_eq(lt_read_runs(c, job, 5000, 0, count_run, &k), 0, "%s",
               bus_last_error());
  return k.n;
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

Test(python, emit_outside_a_pod_speaks_nats) {
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
  snprintf(script, sizeof script, "%s/examples/train.py", lt_source_dir());
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

/* ------------------------------------------------ as a user, with its nkey */

typedef struct secured {
  char data[320];
  lt_natsd srv;
  bus_conn *admin;
  pid_t reports;
} secured;

static void
start_reports(secured *x) {
  char creds[512], log[400], rdata[400];
  lark_creds_path(x->data, "lark-reports", creds, sizeof creds);
  snprintf(log, sizeof log, "%s/reports.log", dir);
  snprintf(rdata, sizeof rdata, "%s/views-reports", dir);
  const char *extra[] = {"--creds", creds, NULL};
  x->reports = lt_start_service("lark-reports", x->srv.url, rdata, log, extra);
  cr_assert(x->reports > 0);
}

static void
secured_start(secured *x, int reports) {
  static const char *const services[] = {"admin", "lark-reports", "alice",
                                         NULL};
  static const lark_role roles[] = {LARK_ROLE_ADMIN, LARK_ROLE_SERVICE,
                                    LARK_ROLE_USER};
  char accounts[400], conf[400], creds[512];
  memset(x, 0, sizeof *x);
  snprintf(x->data, sizeof x->data, "%s/lark", dir);
  mkdir(x->data, 0700);
  for (int i = 0; services[i]; i++)
    cr_assert_eq(lark_creds_ensure(x->data, services[i], roles[i], NULL, NULL),
                 0, "%s", lark_cfg_error());
  lark_principal *p = NULL;
  size_t n = 0;
  snprintf(accounts, sizeof accounts, "%s/accounts.conf", x->data);
  snprintf(conf, sizeof conf, "%s/nats.conf", x->data);
  cr_assert_eq(lark_creds_load(x->data, &p, &n), 0, "%s", lark_cfg_error());
  cr_assert_eq(lark_render_accounts(p, n, accounts), 0, "%s", lark_cfg_error());
  free(p);
  lark_broker_opts o;
  lark_broker_opts_init(&o);
  o.run_dir = x->data;
  cr_assert_eq(lark_render_conf("single", &o, conf), 0, "%s", lark_cfg_error());
  cr_assert_eq(lt_natsd_start(&x->srv, conf, NULL), 0);
  bus_conn_opts co;
  bus_conn_opts_init(&co);
  lark_creds_path(x->data, "admin", creds, sizeof creds);
  co.url = x->srv.url;
  co.creds = creds;
  co.js_wait_ms = 2000;
  co.name = "test";
  cr_assert_eq(bus_conn_open(&x->admin, &co), 0, "%s", bus_last_error());
  /* a window that outlasts a broker restart */
  cr_assert_eq(lt_streams(x->admin, 120000), 0, "%s", bus_last_error());
  if (reports)
    start_reports(x);
  /* only what a user's script has: the module's directory, URL, creds */
  char path[512];
  snprintf(path, sizeof path, "%s/libbus/python", lt_source_dir());
  setenv("PYTHONPATH", path, 1);
  unsetenv("LD_LIBRARY_PATH");
  unsetenv("LARK_SOCKET");
  unsetenv("LARK_JOB");
  unsetenv("LARK_USER");
  unsetenv("LARKCTL");
  setenv("LARK_URL", x->srv.url, 1);
  lark_creds_path(x->data, "alice", creds, sizeof creds);
  setenv("LARK_CREDS", creds, 1);
  setenv("LARK_DATA", x->data, 1);
}

static void
secured_stop(secured *x) {
  if (x->reports > 0)
    lt_kill(x->reports, SIGTERM);
  bus_conn_close(x->admin);
  lt_natsd_stop(&x->srv);
  unsetenv("LARK_CREDS");
  unsetenv("LARK_DATA");
  unsetenv("PYTHONPATH");
}

/* Write a script under dir and start python3 on it. */
static void
script_argv(const char *name, const char *code, char *path, size_t cap,
            char *argv[4]) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(code, f);
  fclose(f);
  argv[0] = (char *)"/usr/bin/env";
  argv[1] = (char *)"python3";
  argv[2] = path;
  argv[3] = NULL;
}

/* Write a script under dir and run python3 on it to completion: its exit
 * code, with stdout and stderr captured as lt_run does. */
static int
run_script(const char *name, const char *code, char *out, size_t cap, char *err,
           size_t errcap) {
  char path[512], *argv[4];
  script_argv(name, code, path, sizeof path, argv);
  return lt_run(argv, out, cap, err, errcap);
}

/* A script that runs first (a line of Python after "import os,
 * larkbus"), then emit and a flush in a try, printing "refused: <why>"
 * when either raises LarkError. */
static int
run_refused(const char *name, const char *first, const char *emit, char *out,
            size_t cap, char *err, size_t errcap) {
  char code[1024];
  snprintf(code, sizeof code,
           "import os, larkbus\n"
           "%s\n"
           "try:\n"
           "    %s\n"
           "    larkbus.flush(30)\n"
           "except larkbus.LarkError as e:\n"
           "    print('refused:', e)\n",
           first, emit);
  return run_script(name, code, out, cap, err, errcap);
}

/* What tally() gathers: seen[step] for each step in [0, n), and how many
 * reports there are in all. */
typedef struct steps_seen {
  int *seen, n;
  long total;
} steps_seen;

/* Check a report is alice's, count its step. */
static void
see_step(const bus_event *ev, void *arg) {
  steps_seen *k = arg;
  cr_assert_str_eq(ev->actor, "alice");
  int64_t step = bus_obj_int(bus_obj_get(&ev->data, "values"), "step", -1);
  cr_assert(step >= 0 && step < k->n, "step %lld", (long long)step);
  k->seen[step]++;
  k->total++;
}

/* Reports on lark.run.<job>: seen[step] counts each step in [0, n); every
 * one must be alice's. Returns how many there are in all, or -1 when the
 * reader failed or was cut short (the broker just restarted): try again. */
static long
tally(bus_conn *c, const char *job, int *seen, int n) {
  memset(seen, 0, sizeof *seen * (size_t)n);
  steps_seen k = {seen, n, 0};
  if (lt_read_runs(c, job, 5000, 1, see_step, &k)) {
    fprintf(stderr, "tally %s: %s\n", job, bus_last_error());
    return -1;
  }
  return k.total;
}

/* Every step in [0, n) exactly once, waiting up to 2 min for lark-reports. */
static void
expect_each_once(bus_conn *c, const char *job, int n) {
  int *seen = calloc((size_t)n, sizeof *seen);
  long total = 0;
  for (int i = 0; i < 1200 && (total = tally(c, job, seen, n)) < n; i++)
    usleep(100 * 1000);
  usleep(500 * 1000); /* anything doubled would show up by now */
  for (int i = 0; i < 100 && (total = tally(c, job, seen, n)) < 0; i++)
    usleep(100 * 1000);
  int missing = 0, doubled = 0;
  for (int i = 0; i < n; i++) {
    missing += seen[i] == 0;
    doubled += seen[i] > 1;
  }
  cr_expect_eq(total, n, "%s: %ld reports for %d", job, total, n);
  cr_expect_eq(missing, 0, "%s: %d missing", job, missing);
  cr_expect_eq(doubled, 0, "%s: %d doubled", job, doubled);
  free(seen);
}

/* A script whose child after fork() reports on its own connection while
 * the parent goes on reporting on its own. */
static const char fork_py[] =
    "import os, larkbus\n"
    "for i in range(500):\n"
    "    larkbus.emit('metric', job='py-fork', step=i)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    for i in range(1000, 1500):\n"
    "        larkbus.emit('metric', job='py-fork', step=i)\n"
    "    larkbus.flush(60)\n"
    "    os._exit(0)\n"
    "for i in range(500, 1000):\n"
    "    larkbus.emit('metric', job='py-fork', step=i)\n"
    "larkbus.flush(60)\n"
    "_, st = os.waitpid(pid, 0)\n"
    "assert st == 0, st\n";

Test(python, a_user_emits_thousands_on_one_connection, .timeout = 240) {
  secured x;
  secured_start(&x, 1);
  char out[4096], err[8192];

  /* importing prints nothing and connects to nothing */
  int rc = run_script("import.py", "import larkbus\n", out, sizeof out, err,
                      sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_str_eq(out, "", "nothing on stdout at import");
  cr_expect_str_eq(err, "", "nothing on stderr at import");

  rc = run_script("many.py",
                  "import larkbus\nfor i in range(3000):\n"
                  "    larkbus.emit('metric', job='py-many', step=i, "
                  "loss=1.0/(i+1), tag='t', ok=True, none=None)\n"
                  "larkbus.flush(60)\n",
                  out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_str_eq(out, "");
  expect_each_once(x.admin, "py-many", 3000);

  /* a child after fork() reports on its own connection; the parent's
   * reports in flight at the fork stay the parent's (not doubled) */
  rc = run_script("fork.py", fork_py, out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  expect_each_once(x.admin, "py-fork", 1500);

  /* a report the broker will never take: flush says so */
  rc = run_refused("refused.py", "",
                   "larkbus.emit('metric', job='py-big', blob='x' * 200000)",
                   out, sizeof out, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect(strstr(out, "refused:"), "%s", out);

  /* another user's subject: the broker says no, flush says so */
  rc = run_refused("denied.py", "os.environ['LARK_USER'] = 'bob'",
                   "larkbus.emit('metric', job='py-denied', step=1)", out,
                   sizeof out, err, sizeof err);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect(strstr(out, "refused:") && strstr(out, "permission denied"), "%s",
            out);
  secured_stop(&x);
}

Test(python, a_broker_restart_loses_and_doubles_nothing, .timeout = 240) {
  secured x;
  secured_start(&x, 0);
  char path[512], log[512], ready[512], code[2048], *argv[4];
  snprintf(ready, sizeof ready, "%s/ready", dir);
  snprintf(log, sizeof log, "%s/restart.log", dir);
  snprintf(code, sizeof code,
           "import time, larkbus\n"
           "for i in range(2000):\n"
           "    larkbus.emit('metric', job='py-restart', step=i)\n"
           "larkbus.flush(60)\n"
           "open('%s', 'w').close()\n"
           "for i in range(2000, 6000):\n"
           "    larkbus.emit('metric', job='py-restart', step=i)\n"
           "    if i %% 20 == 0:\n"
           "        time.sleep(0.005)\n"
           "larkbus.flush(90)\n"
           "print('stored', 'again' if larkbus._broker.gen > 1 else 'once')\n",
           ready);
  script_argv("restart.py", code, path, sizeof path, argv);
  pid_t py = lt_spawn(argv, log);
  cr_assert(py > 0);
  for (int i = 0; i < 600 && access(ready, F_OK) != 0; i++)
    usleep(50 * 1000);
  cr_assert_eq(access(ready, F_OK), 0, "the script never got going");
  usleep(200 * 1000); /* mid-stream */
  cr_assert_eq(lt_natsd_kill_restart(&x.srv), 0);
  int st = 0;
  cr_assert_eq(waitpid(py, &st, 0), py);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the script failed: %s",
            log);
  char out[4096] = "";
  FILE *f = fopen(log, "r");
  if (f) {
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
  }
  cr_expect(strstr(out, "stored again"), "connected again: %s", out);
  /* LARK_REPORTS took each report once: 6000 messages, no more (a report
   * sent again after the restart was dropped as a duplicate) */
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(x.admin, "LARK_REPORTS", &seq), 0, "%s",
               bus_last_error());
  cr_expect_eq(seq, 6000, "LARK_REPORTS holds %llu", (unsigned long long)seq);
  /* and the event log has every one exactly once, as alice's */
  start_reports(&x);
  expect_each_once(x.admin, "py-restart", 6000);
  secured_stop(&x);
}

/* A listening socket at dir/pod.sock (made afresh), named by
 * LARK_SOCKET as a pod's is: a pod's socket, played by this test. */
static int
pod_socket(int backlog) {
  char path[512];
  snprintf(path, sizeof path, "%s/pod.sock", dir);
  unlink(path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(path), sizeof sa.sun_path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(fd, backlog), 0);
  setenv("LARK_SOCKET", path, 1);
  return fd;
}

/* Stop serving pod_socket fd: wake the thread th in accept, join it;
 * LARK_SOCKET goes. */
static void
pod_socket_close(int fd, pthread_t th) {
  shutdown(fd, SHUT_RDWR);
  pthread_join(th, NULL);
  close(fd);
  unsetenv("LARK_SOCKET");
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
  char out[1024];
  listener l = {.reply = reply};
  l.fd = pod_socket(1);
  pthread_t th;
  pthread_create(&th, NULL, serve_one, &l);
  unsetenv("LARK_JOB");
  setenv("LARKCTL", "/nonexistent/larkctl", 1); /* never used in a pod */
  *rc = python(code, out, sizeof out, err, errcap);
  pod_socket_close(l.fd, th);
  strcpy(line, l.line);
}

/* A pod's socket that answers "ok" to every line on every connection it
 * takes, one connection at a time, counting both. */
typedef struct counter {
  int fd, conns, lines;
} counter;

static void *
serve_all(void *arg) {
  counter *k = arg;
  int c;
  while ((c = accept(k->fd, NULL, NULL)) >= 0) {
    k->conns++;
    char ch;
    while (read(c, &ch, 1) == 1)
      if (ch == '\n') {
        k->lines++;
        if (write(c, "ok\n", 3) != 3)
          break;
      }
    close(c);
  }
  return NULL;
}

Test(python, a_pod_keeps_its_socket_open_across_reports) {
  char out[1024], err[4096];
  counter k = {0};
  k.fd = pod_socket(4);
  pthread_t th;
  pthread_create(&th, NULL, serve_all, &k);
  unsetenv("LARK_JOB");
  /* a second connection would wait behind the first and time out */
  int rc = python("for i in range(100):\n"
                  "    larkbus.emit('metric', step=i)\n"
                  "larkbus.flush()\n",
                  out, sizeof out, err, sizeof err);
  pod_socket_close(k.fd, th);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_eq(k.lines, 100);
  cr_expect_eq(k.conns, 1, "one connection for every report");
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
           "try:\n  larkbus.emit('metric', step=1)\n  larkbus.flush()\n"
           "except larkbus.LarkError as e:\n  print(e, file=sys.stderr)\n"
           "  sys.exit(3)\n",
           &rc, line, err, sizeof err);
  cr_expect_eq(rc, 3, "an error reply raises LarkError at flush");
  cr_expect(strstr(err, "1 report(s) refused: pod is not running"), "%s", err);

  pod_emit("error: pod is not running\n", "larkbus.emit('metric', step=1)", &rc,
           line, err, sizeof err);
  cr_expect_eq(rc, 0);
  cr_expect(strstr(err, "larkbus: 1 report(s) refused"),
            "unflushed at exit, said on stderr: %s", err);

  pod_emit("", "larkbus.emit('metric', step=1)\nlarkbus.flush()", &rc, line,
           err, sizeof err);
  cr_expect_neq(rc, 0, "no reply is an error");
  cr_expect(strstr(err, "1 report(s) not confirmed"), "%s", err);

  pod_emit("ok\n", "larkbus.emit('metric', step=[1, 2])", &rc, line, err,
           sizeof err);
  cr_expect_neq(rc, 0, "what the node refuses is refused at emit");
  cr_expect(strstr(err, "numbers, strings, booleans or null"), "%s", err);

  pod_emit("ok\n", "larkbus.emit('metric', **{'': 1})", &rc, line, err,
           sizeof err);
  cr_expect_neq(rc, 0, "an empty value name is refused at emit");
  cr_expect(strstr(err, "a value's name is empty"), "%s", err);
}

/* A pod's socket that reads lines until it holds k->hold of them, then
 * answers them all at once: "ok", but "error: no" for line k->bad. */
typedef struct holder {
  int fd, hold, bad, lines;
} holder;

static void *
serve_held(void *arg) {
  holder *k = arg;
  int c = accept(k->fd, NULL, NULL);
  char ch;
  while (c >= 0 && k->lines < k->hold && read(c, &ch, 1) == 1)
    k->lines += ch == '\n';
  for (int i = 0; c >= 0 && i < k->lines; i++) {
    const char *a = i == k->bad ? "error: no\n" : "ok\n";
    if (write(c, a, strlen(a)) < 0)
      break;
  }
  if (c >= 0)
    close(c);
  return NULL;
}

Test(python, a_pod_pipelines_its_lines_and_flush_waits_for_every_answer) {
  char out[1024], err[4096];
  holder k = {.hold = 100, .bad = 42};
  k.fd = pod_socket(4);
  pthread_t th;
  pthread_create(&th, NULL, serve_held, &k);
  /* emit waiting for each answer would wait forever on the first */
  int rc = python("for i in range(100):\n"
                  "    larkbus.emit('metric', step=i)\n"
                  "try:\n"
                  "    larkbus.flush()\n"
                  "except larkbus.LarkError as e:\n"
                  "    print(e)\n",
                  out, sizeof out, err, sizeof err);
  pod_socket_close(k.fd, th);
  cr_expect_eq(rc, 0, "%s", err);
  cr_expect_eq(k.lines, 100, "every line written before any answer");
  cr_expect(strstr(out, "1 report(s) refused: no"), "%s", out);
}

Test(python, example_job_is_valid) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/examples/train-job.yaml", lt_source_dir());
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

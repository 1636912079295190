/*
 * bench.c - the pieces every benchmark shares (bench.h).
 */
#include "bench.h"

#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
bench_load(char *out, size_t cap) {
  FILE *f = fopen("/proc/loadavg", "r");
  snprintf(out, cap, "?");
  if (f && fgets(out, (int)cap, f))
    out[strcspn(out, "\n")] = 0;
  if (f)
    fclose(f);
}

double
bench_now_s(void) {
  return (double)bus_mono_ns() / 1e9;
}

static int
dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double
bench_pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, dcmp);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

void
bench_die(const char *what, const char *detail) {
  fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, detail);
  exit(1);
}

int
bench_opts(int argc, char **argv, const bench_opt *opts) {
  int rc = 0;
  for (int i = 1; i < argc; i += 2) {
    const bench_opt *o = opts;
    while (o->flag && strcmp(o->flag, argv[i]))
      o++;
    if (!o->flag || i + 1 >= argc) {
      rc = -1;
      continue;
    }
    if (o->i)
      *o->i = atoi(argv[i + 1]);
    else if (o->l)
      *o->l = strtol(argv[i + 1], NULL, 10);
    else
      *o->s = argv[i + 1];
  }
  return rc;
}

bus_conn *
bench_connect(const char *url, const char *name, int js_wait_ms) {
  bus_conn *c = NULL;
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = url;
  o.name = name;
  o.js_wait_ms = js_wait_ms;
  if (bus_conn_open(&c, &o) < 0)
    bench_die("connect", bus_last_error());
  return c;
}

bus_conn *
bench_connect_streams(const char *url, int js_wait_ms) {
  bus_conn *c = bench_connect(url, "bench", js_wait_ms);
  if (bus_streams_ensure(c, NULL) < 0)
    bench_die("streams", bus_last_error());
  return c;
}

void
bench_natsd_start(lt_natsd *s, const char *dir, int always,
                  const char *const *extra) {
  char conf[400];
  if (always) {
    snprintf(conf, sizeof conf, "%s/always.conf", dir);
    FILE *f = fopen(conf, "w");
    if (!f)
      bench_die("config", conf);
    fputs("jetstream { sync_interval: always }\n", f);
    fclose(f);
  }
  if (lt_natsd_start(s, always ? conf : NULL, extra) < 0)
    bench_die("nats-server", "did not start");
}

pid_t
bench_scheduler_up(const char *argv0, const char *tag, int always,
                   lt_natsd *srv, bus_conn **c, char *dir, size_t cap) {
  lt_tmpdir(dir, cap, tag);
  bench_natsd_start(srv, dir, always, NULL);
  if (lt_connect(srv, c) || lt_streams(*c, 120000))
    bench_die("broker", bus_last_error());
  pid_t sched = bench_start_service(argv0, "lark-scheduler", srv->url, dir);
  bench_wait_up(*c, "scheduler");
  return sched;
}

void
bench_lazy_always(const char *tag, bench_measure_fn *measure, void *ud) {
  lt_natsd lazy, always;
  char dir[256];
  lt_tmpdir(dir, sizeof dir, tag);
  bench_natsd_start(&lazy, dir, 0, NULL);
  bench_natsd_start(&always, dir, 1, NULL);
  measure(lazy.url, 1, 0, ud);
  measure(always.url, 1, 1, ud);
  measure(always.url, 2, 1, ud);
  measure(lazy.url, 2, 0, ud);
  lt_natsd_stop(&always);
  lt_natsd_stop(&lazy);
  lt_rmtree(dir);
}

void
bench_ratio_head(const char *what) {
  printf("  %-34s %10s %10s %8s\n", what, "lazy", "always", "ratio");
}

void
bench_ratio_row(const char *what, double lazy, double always) {
  if (lazy > 0 && always > 0)
    printf("  %-34s %10.0f %10.0f %8.2f\n", what, lazy, always, always / lazy);
  else
    printf("  %-34s %10s %10s\n", what, "n/a", "n/a");
}

void
bench_event_init(bus_event *ev, char id[33], const char *type,
                 const char *actor, const msgpack_sbuffer *data) {
  memset(ev, 0, sizeof *ev);
  bus_event_new_id(id);
  ev->v = BUS_SCHEMA_VERSION;
  ev->type = type;
  ev->id = id;
  ev->ts = bus_wall_ns();
  ev->actor = actor;
  ev->cause = "";
  ev->data_mp = data->data;
  ev->data_mp_len = data->size;
}

uint64_t
bench_append(bus_conn *c, const char *subject, const char *type, uint64_t prev,
             const msgpack_sbuffer *data) {
  bus_event ev;
  char id[33];
  uint64_t seq = 0;
  bench_event_init(&ev, id, type, "bench", data);
  ev.prev = prev;
  if (bus_append(c, subject, &ev, BUS_APPEND_CHECK, &seq, NULL))
    bench_die(type, bus_last_error());
  return seq;
}

void
bench_sample_data(msgpack_sbuffer *data, size_t text_len) {
  char text[4096];
  size_t n = text_len < sizeof text ? text_len : sizeof text;
  msgpack_packer pk;
  memset(text, 'x', n);
  msgpack_sbuffer_clear(data);
  msgpack_packer_init(&pk, data, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  bus_pack_str(&pk, "text");
  msgpack_pack_str_with_body(&pk, text, n);
}

void
bench_sample_event(bus_event *ev, msgpack_sbuffer *data, char id[33],
                   size_t text_len) {
  bench_sample_data(data, text_len);
  bench_event_init(ev, id, "sample.created", "bench", data);
  ev->ts = 1700000000000000000;
}

double
bench_nats_cli_rate(const char *cmd) {
  char line[1024];
  double rate = 0;
  FILE *p = popen(cmd, "r");
  if (!p)
    return 0;
  while (fgets(line, sizeof line, p)) {
    char *s = strstr(line, "stats: ");
    if (!s)
      continue;
    char digits[32];
    size_t k = 0;
    for (s += 7; *s && *s != ' ' && k + 1 < sizeof digits; s++)
      if (*s != ',')
        digits[k++] = *s;
    digits[k] = 0;
    rate = strtod(digits, NULL);
  }
  pclose(p);
  return rate;
}

void
bench_job_init(bench_job *j, const char *name, const char *task,
               const char *role, int replicas, int sized,
               const char *const *entrypoint) {
  static const char *const run_true[] = {"true", NULL};
  memset(j, 0, sizeof *j);
  if (!entrypoint)
    entrypoint = run_true;
  uint32_t n = 0;
  while (n < 4 && entrypoint[n]) {
    j->argv[n] = bus_str_of(entrypoint[n]);
    n++;
  }
  bus_task *t = &j->task;
  t->name = bus_str_of(task);
  t->role = bus_str_of(role);
  t->has_replicas = 1;
  t->replicas = (uint64_t)replicas;
  t->has_resources = sized;
  t->resources =
      (bus_resources){.has_cpu = 1, .cpu = 1, .has_memory = 1, .memory = 256};
  t->runtime.has_raw = 1;
  t->runtime.raw.has_entrypoint = 1;
  t->runtime.raw.entrypoint = (bus_str_list){j->argv, n};
  j->res.apiVersion = BUS_STR("rlinf.io/v1alpha1");
  j->res.kind = BUS_STR("Job");
  j->res.metadata.name = bus_str_of(name);
  j->res.spec.tasks = (bus_task_list){t, 1};
}

void
bench_placed_pack(msgpack_sbuffer *out, bus_ev_job_placed *d,
                  const bus_binding *b, int pods) {
  bus_binding *v = calloc((size_t)pods, sizeof *v);
  char(*names)[80] = calloc((size_t)pods, sizeof *names);
  if (!v || !names)
    bench_die("memory", "bindings");
  char task[64];
  bus_str_copy(b->task, task, sizeof task);
  for (int p = 0; p < pods; p++) {
    v[p] = *b;
    snprintf(names[p], sizeof names[p], "%s-%d", task, p);
    v[p].pod = bus_str_of(names[p]);
  }
  d->bindings = (bus_binding_list){v, (uint32_t)pods};
  msgpack_sbuffer_clear(out);
  if (bus_job_placed_pack(out, d))
    bench_die("job.placed", bus_last_error());
  d->bindings = (bus_binding_list){NULL, 0};
  free(names);
  free(v);
}

void
bench_call(bus_conn *c, const char *subject, const msgpack_sbuffer *sb) {
  void *reply = NULL;
  size_t len = 0;
  int rc =
      bus_conn_request(c, subject, sb->data, sb->size, 10000, &reply, &len);
  /* a service just started may not serve yet (a loaded machine takes
   * longer than the caller's pause): asked again for up to 30 s */
  for (int i = 0; rc == BUS_ENOT_FOUND && i < 300; i++) {
    usleep(100 * 1000);
    rc = bus_conn_request(c, subject, sb->data, sb->size, 10000, &reply, &len);
  }
  if (rc)
    bench_die(subject, bus_last_error());
  if (len > 8 && memmem(reply, len, "error", 5))
    bench_die(subject, "refused");
  free(reply);
}

void
bench_add_node(bus_conn *c, const char *name) {
  bus_node_res n = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                    .kind = BUS_STR("Node"),
                    .metadata.name = bus_str_of(name),
                    .spec = {.cluster = BUS_STR("c1"),
                             .capacity = {.has_cpu = 1,
                                          .cpu = 64,
                                          .has_memory = 1,
                                          .memory = 262144}}};
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "key", name);
  bus_pack_str(&b.pk, "resource");
  bus_node_res_write(&b.pk, &n);
  bench_call(c, "lark.cmd.admin.node.apply", &b.sb);
  bus_packbuf_destroy(&b);
}

void
bench_add_nodes(bus_conn *c, int count) {
  for (int i = 0; i < count; i++) {
    char name[32];
    snprintf(name, sizeof name, "n%04d", i);
    bench_add_node(c, name);
  }
}

void
bench_apply_job(bus_conn *c, const bench_job *j) {
  char key[BUS_NAME_MAX + 1];
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "key",
                  bus_str_copy(j->res.metadata.name, key, sizeof key));
  bus_pack_str(&b.pk, "resource");
  bus_job_res_write(&b.pk, &j->res);
  bench_call(c, "lark.cmd.admin.job.apply", &b.sb);
  bus_packbuf_destroy(&b);
}

void
bench_add_job(bus_conn *c, const char *name, int pods, const char *strategy) {
  bench_job j;
  bench_job_init(&j, name, "w", "Rollout", pods, 1, NULL);
  j.res.spec.has_strategy = 1;
  j.res.spec.strategy = bus_str_of(strategy);
  bench_apply_job(c, &j);
}

void
bench_add_jobs(bus_conn *c, int jobs, int pods, const char *strategy) {
  for (int i = 0; i < jobs; i++) {
    char name[32];
    snprintf(name, sizeof name, "job%04d", i);
    bench_add_job(c, name, pods,
                  strategy ? strategy
                  : i % 2  ? "spread"
                           : "pack");
  }
}

pid_t
bench_start_service(const char *argv0, const char *name, const char *url,
                    const char *dir) {
  char self[4096], bin[4200], data[512], log[512];
  snprintf(self, sizeof self, "%s", argv0);
  snprintf(bin, sizeof bin, "%s/%s", dirname(self), name);
  snprintf(data, sizeof data, "%s/view", dir);
  snprintf(log, sizeof log, "%s/%s.log", dir, name);
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(log, "w", stderr))
      _exit(126);
    execl(bin, bin, "--url", url, "--data", data, (char *)NULL);
    _exit(127);
  }
  return pid;
}

void
bench_wait_up(bus_conn *c, const char *name) {
  bus_status st;
  for (int i = 0; i < 600; i++, usleep(100 * 1000))
    if (bus_status_query(c, name, 500, &st) == 0 && !strcmp(st.state, "up"))
      return;
  bench_die(name, "does not answer its status request after 60 s");
}

void
bench_stop_service(pid_t pid, const char *name) {
  if (lt_stop(pid, SIGTERM, 15000) == 1)
    fprintf(stderr, "bench: %s did not stop within 15 s of SIGTERM: killed\n",
            name);
}

static void *
loop_run(void *ud) {
  bench_loop *l = ud;
  l->opts.stop_flag = &l->stop;
  l->rc = bus_service_run(l->c, l->v, &l->opts);
  if (l->rc)
    fprintf(stderr, "service: %s\n", bus_last_error());
  return NULL;
}

void
bench_loop_start(bench_loop *l) {
  atomic_store(&l->stop, 0);
  l->rc = 0;
  if (pthread_create(&l->th, NULL, loop_run, l))
    bench_die("service", "cannot start its thread");
}

void
bench_loop_stop(bench_loop *l) {
  atomic_store(&l->stop, 1);
  pthread_join(l->th, NULL);
}

long
bench_wait_bindings(bus_conn *c, long want, double deadline,
                    bench_binding_fn *each, void *ud) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = "lark.ev.placement.default";
  o.follow = 1;
  bus_reader *r;
  bus_batch *b;
  long n = 0;
  if (bus_reader_open(c, &o, &r) || bus_batch_new(&b))
    bench_die("reader", bus_last_error());
  while (n < want && bench_now_s() < deadline) {
    bus_reader_next(r, b, 200);
    for (size_t i = 0; i < bus_batch_len(b); i++) {
      const bus_event *ev = bus_batch_event(b, i);
      const msgpack_object *bs = ev ? bus_obj_get(&ev->data, "bindings") : 0;
      if (!bs || bs->type != MSGPACK_OBJECT_ARRAY)
        continue;
      for (uint32_t k = 0; k < bs->via.array.size; k++, n++)
        if (each && n < want)
          each(ev, &bs->via.array.ptr[k], n, ud);
    }
  }
  bus_batch_free(b);
  bus_reader_close(r);
  return n;
}

/* CPU seconds (user + system) process pid has used. */
double
bench_cpu_s(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  /* after the name: state ppid pgrp session tty tpgid flags minflt
   * cminflt majflt cmajflt utime stime */
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                   &ut, &st) != 2)
    return 0;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

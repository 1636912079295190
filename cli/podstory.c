/*
 * podstory.c - the Events of `describe pod`: everything that happened to
 * one pod, from the subjects that carry it (docs/design.md sections 1-3):
 *
 *   lark.ev.placement.default  job.placed binding it (attempt 0: Scheduled,
 *                              later attempts: Retried), job.unplaced
 *   lark.ev.pod.<pod>          pod.phase as its node reported it
 *   lark.ev.job.<job>          job.stopped, job.resumed, job.deleted
 *   lark.ev.domain.<d>         domain.allocated (its virtual IP),
 *                              domain.released, domain.exhausted
 *
 * Each is read with batch direct gets (bus_reader_opts.direct), the reader
 * a user may use, from the submission of the pod's Job (so an older
 * generation of the same name stays out) up to --at. All live on
 * LARK_EVENTS, so stream order is the order they happened in.
 *
 * A device's story (`describe device`) is the one subject that carries
 * it, lark.ev.device.<node>.<name>: who commanded the robot, what its
 * node saw, what its camera did.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds.h"

typedef struct story {
  const char *pod, *job;
  json_t *events;
  uint64_t seq;   /* of the event being read */
  int64_t stored; /* its stored time */
} story;

typedef void (*on_event)(story *s, const bus_event *ev);

static void
add(story *s, const char *type, const char *reason, const char *from,
    const char *msg) {
  json_array_append_new(s->events,
                        json_pack("{s:I, s:I, s:s, s:s, s:s, s:s}", "seq",
                                  (json_int_t)s->seq, "time",
                                  (json_int_t)s->stored, "type", type, "reason",
                                  reason, "from", from, "message", msg));
}

static int
data_is(const bus_event *ev, const char *key, const char *want) {
  char v[BUS_DERIVED_NAME_MAX + 1];
  return bus_obj_str(&ev->data, key, v, sizeof v) && !strcmp(v, want);
}

/* The element of list data.<key> whose "pod" is s->pod, or NULL. */
static const msgpack_object *
pod_entry(const story *s, const bus_event *ev, const char *key) {
  const msgpack_object *a = bus_obj_get(&ev->data, key);
  for (uint32_t i = 0;
       a && a->type == MSGPACK_OBJECT_ARRAY && i < a->via.array.size; i++) {
    char v[BUS_DERIVED_NAME_MAX + 1];
    if (bus_obj_str(&a->via.array.ptr[i], "pod", v, sizeof v) &&
        !strcmp(v, s->pod))
      return &a->via.array.ptr[i];
  }
  return NULL;
}

static void
on_placement(story *s, const bus_event *ev) {
  char msg[512], node[BUS_NAME_MAX + 1] = "", reason[400] = "";
  if (!data_is(ev, "job", s->job))
    return;
  if (!strcmp(ev->type, "job.unplaced")) {
    bus_obj_str(&ev->data, "reason", reason, sizeof reason);
    snprintf(msg, sizeof msg, "job %s unplaced%s%s", s->job,
             reason[0] ? ": " : "", reason);
    add(s, "Normal", "Unplaced", ev->actor, msg);
    return;
  }
  const msgpack_object *b = pod_entry(s, ev, "bindings");
  if (!b || strcmp(ev->type, "job.placed"))
    return;
  bus_obj_str(b, "node", node, sizeof node);
  int64_t attempt = bus_obj_int(b, "attempt", 0);
  snprintf(msg, sizeof msg, "attempt %lld assigned to node %s",
           (long long)attempt, node);
  add(s, attempt ? "Warning" : "Normal", attempt ? "Retried" : "Scheduled",
      ev->actor, msg);
}

static void
on_phase(story *s, const bus_event *ev) {
  char phase[32] = "", node[BUS_NAME_MAX + 1] = "", ip[64] = "", why[400] = "",
       msg[768];
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  bus_obj_str(&ev->data, "node", node, sizeof node);
  bus_obj_str(&ev->data, "localIP", ip, sizeof ip);
  bus_obj_str(&ev->data, "reason", why, sizeof why);
  int n = snprintf(msg, sizeof msg, "attempt %lld on node %s",
                   (long long)bus_obj_int(&ev->data, "attempt", 0), node);
  if (bus_obj_get(&ev->data, "exitCode") && n < (int)sizeof msg)
    n += snprintf(msg + n, sizeof msg - (size_t)n, ", exit code %lld",
                  (long long)bus_obj_int(&ev->data, "exitCode", 0));
  if (bus_obj_get(&ev->data, "signal") && n < (int)sizeof msg)
    n += snprintf(msg + n, sizeof msg - (size_t)n, ", signal %lld",
                  (long long)bus_obj_int(&ev->data, "signal", 0));
  if (ip[0] && n < (int)sizeof msg)
    n += snprintf(msg + n, sizeof msg - (size_t)n, ", local IP %s", ip);
  if (why[0] && n < (int)sizeof msg)
    snprintf(msg + n, sizeof msg - (size_t)n, ": %s", why);
  add(s, strcmp(phase, "Failed") ? "Normal" : "Warning", phase, ev->actor, msg);
}

static void
on_job(story *s, const bus_event *ev) {
  static const char *const map[][2] = {{"job.stopped", "Stopping"},
                                       {"job.resumed", "Resumed"},
                                       {"job.deleted", "Deleting"}};
  char reason[400] = "", msg[512];
  bus_obj_str(&ev->data, "reason", reason, sizeof reason);
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(ev->type, map[i][0])) {
      snprintf(msg, sizeof msg, "job %s %s%s%s", s->job, map[i][0] + 4,
               reason[0] ? ": " : "", reason);
      add(s, "Normal", map[i][1], ev->actor, msg);
    }
}

static void
on_domain(story *s, const bus_event *ev) {
  char d[BUS_NAME_MAX + 1] = "", ip[64] = "", msg[512];
  bus_obj_str(&ev->data, "domain", d, sizeof d);
  const msgpack_object *a = pod_entry(s, ev, "addresses");
  if (!strcmp(ev->type, "domain.allocated") && a) {
    bus_obj_str(a, "ip", ip, sizeof ip);
    snprintf(msg, sizeof msg, "virtual IP %s in domain %s", ip, d);
    add(s, "Normal", "Addressed", ev->actor, msg);
  } else if (!strcmp(ev->type, "domain.exhausted") &&
             data_is(ev, "job", s->job)) {
    snprintf(msg, sizeof msg, "domain %s has %lld free addresses, %lld needed",
             d, (long long)bus_obj_int(&ev->data, "free", 0),
             (long long)bus_obj_int(&ev->data, "needed", 0));
    add(s, "Warning", "AddressesExhausted", ev->actor, msg);
  }
  const msgpack_object *pods = bus_obj_get(&ev->data, "pods");
  for (uint32_t i = 0;
       !strcmp(ev->type, "domain.released") && pods &&
       pods->type == MSGPACK_OBJECT_ARRAY && i < pods->via.array.size;
       i++) {
    const msgpack_object *p = &pods->via.array.ptr[i];
    if (p->type == MSGPACK_OBJECT_STR && p->via.str.size == strlen(s->pod) &&
        !memcmp(p->via.str.ptr, s->pod, p->via.str.size)) {
      snprintf(msg, sizeof msg, "virtual IP given back to domain %s", d);
      add(s, "Normal", "Released", ev->actor, msg);
    }
  }
}

/* Every event on filter from since to until (0: now), through fn. */
static int
read_subject(bus_conn *c, const char *filter, int64_t since, int64_t until,
             story *s, on_event fn) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = filter;
  o.since_ns = since;
  o.until_ns = until;
  o.direct = 1;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  int rc = bus_reader_open(c, &o, &r);
  if (!rc)
    rc = bus_batch_new(&b);
  while (!rc) {
    rc = bus_reader_next(r, b, 2000);
    for (size_t i = 0; (!rc || rc == BUS_EEOF) && i < bus_batch_len(b); i++) {
      const bus_event *ev = bus_batch_event(b, i);
      const char *subj;
      bus_batch_meta(b, i, &subj, &s->seq, &s->stored);
      if (ev)
        fn(s, ev);
    }
  }
  bus_batch_free(b);
  bus_reader_close(r);
  return rc == BUS_EEOF ? 0 : rc;
}

static int
by_seq(const void *a, const void *b) {
  json_int_t x =
      json_integer_value(json_object_get(*(json_t *const *)a, "seq"));
  json_int_t y =
      json_integer_value(json_object_get(*(json_t *const *)b, "seq"));
  return (x > y) - (x < y);
}

/* The events sorted by stream sequence, as a new array. */
static json_t *
sorted(json_t *events) {
  size_t n = json_array_size(events);
  json_t **v = malloc((n ? n : 1) * sizeof *v), *out = json_array();
  for (size_t i = 0; v && i < n; i++)
    v[i] = json_array_get(events, i);
  if (v)
    qsort(v, n, sizeof *v, by_seq);
  for (size_t i = 0; v && i < n; i++)
    json_array_append(out, v[i]);
  free(v);
  return out;
}

int
cli_pod_story(lark_cli *cli, const char *pod, const char *job,
              const char *domain, int64_t since, int64_t at, json_t **out) {
  story s = {pod, job, json_array(), 0, 0};
  char f[4][BUS_SUBJECT_MAX];
  snprintf(f[0], sizeof f[0], "lark.ev.placement.>");
  snprintf(f[1], sizeof f[1], "lark.ev.pod.%s", pod);
  snprintf(f[2], sizeof f[2], "lark.ev.job.%s", job);
  snprintf(f[3], sizeof f[3], "lark.ev.domain.%s", domain);
  on_event fns[] = {on_placement, on_phase, on_job, on_domain};
  bus_conn *c = cli_connect(cli);
  int rc = c ? 0 : BUS_ECONN;
  for (int i = 0; !rc && i < (domain && *domain ? 4 : 3); i++)
    rc = read_subject(c, f[i], since, at, &s, fns[i]);
  bus_conn_close(c);
  *out = sorted(s.events);
  json_decref(s.events);
  if (rc && c)
    cli_fail("describe", rc, "reading the pod's events");
  return rc ? CLI_ERR : CLI_OK;
}

/* ---------------------------------------------------------- devices */

/* Append to msg (cap bytes, *n used) what fmt says. */
static void
put(char *msg, size_t cap, size_t *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (*n < cap) {
    int k = vsnprintf(msg + *n, cap - *n, fmt, ap);
    *n += k > 0 ? (size_t)k : 0;
  }
  va_end(ap);
}

/* What a device event says, for people: robot.commanded "start mode pick
 * by pod p, forced over holder h: why"; the others their mode, pod, exit,
 * restarts, frames and bytes, and why. */
static void
device_message(const bus_event *ev, char *msg, size_t cap) {
  static const char *const counts[] = {"exitCode", "signal", "restarts",
                                       "frames",   "bytes",  NULL};
  const msgpack_object *d = &ev->data, *f = bus_obj_get(d, "force");
  char op[16] = "", v[BUS_DERIVED_NAME_MAX + 1];
  size_t n = 0;
  msg[0] = 0;
  if (bus_obj_str(d, "op", op, sizeof op))
    put(msg, cap, &n, "%s", op);
  if (bus_obj_str(d, "mode", v, sizeof v))
    put(msg, cap, &n, "%s%s",
        !n                   ? "mode "
        : strcmp(op, "mode") ? " mode "
                             : " to ",
        v);
  if (bus_obj_str(d, "pod", v, sizeof v))
    put(msg, cap, &n, "%sby pod %s", n ? " " : "", v);
  for (int i = 0; counts[i]; i++)
    if (bus_obj_get(d, counts[i]))
      put(msg, cap, &n, "%s%s %lld", n ? ", " : "", counts[i],
          (long long)bus_obj_int(d, counts[i], 0));
  if (f && f->type == MSGPACK_OBJECT_BOOLEAN && f->via.boolean &&
      bus_obj_str(d, "holder", v, sizeof v))
    put(msg, cap, &n, ", forced over holder %s", v);
  char reason[512];
  if (bus_obj_str(d, "reason", reason, sizeof reason) && reason[0])
    put(msg, cap, &n, "%s%s", n ? ": " : "", reason);
}

static void
on_device(story *s, const bus_event *ev) {
  char reason[64], msg[1024];
  const char *dot = strchr(ev->type, '.');
  snprintf(reason, sizeof reason, "%s", dot ? dot + 1 : ev->type);
  reason[0] =
      (char)(reason[0] >= 'a' && reason[0] <= 'z' ? reason[0] - 32 : reason[0]);
  device_message(ev, msg, sizeof msg);
  int warn = !strcmp(ev->type, "robot.exited") ||
             !strcmp(ev->type, "robot.restarted") ||
             !strcmp(ev->type, "camera.error");
  add(s, warn ? "Warning" : "Normal", reason, ev->actor, msg);
}

int
cli_device_story(lark_cli *cli, const char *node, const char *name, int64_t at,
                 json_t **out) {
  story s = {name, "", json_array(), 0, 0};
  char filter[BUS_SUBJECT_MAX];
  snprintf(filter, sizeof filter, "lark.ev.device.%s.%s", node, name);
  bus_conn *c = cli_connect(cli);
  int rc = c ? read_subject(c, filter, 0, at, &s, on_device) : BUS_ECONN;
  bus_conn_close(c);
  *out = s.events;
  if (rc && c)
    cli_fail("describe", rc, "reading the device's events");
  return rc ? CLI_ERR : CLI_OK;
}

void
cli_print_story(const json_t *events) {
  size_t i, w[4] = {4, 4, 6, 4};
  json_t *e;
  static const char *const keys[] = {"type", "reason", "from"};
  json_array_foreach(events, i, e) for (int k = 0; k < 3; k++) {
    size_t len = json_string_length(json_object_get(e, keys[k]));
    if (len > w[k + 1])
      w[k + 1] = len;
  }
  printf("\nEvents:\n");
  if (!json_array_size(events)) {
    printf("  <none>\n");
    return;
  }
  printf("  %-24s %-5s %-*s %-*s %-*s %s\n", "TIME", "AGE", (int)w[1], "TYPE",
         (int)w[2], "REASON", (int)w[3], "FROM", "MESSAGE");
  json_array_foreach(events, i, e) {
    char when[48], age[16];
    json_int_t t = json_integer_value(json_object_get(e, "time"));
    cli_format_time(t, when, sizeof when);
    cli_age(t, age, sizeof age);
    printf("  %-24s %-5s %-*s %-*s %-*s %s\n", when, age, (int)w[1],
           json_string_value(json_object_get(e, "type")), (int)w[2],
           json_string_value(json_object_get(e, "reason")), (int)w[3],
           json_string_value(json_object_get(e, "from")),
           json_string_value(json_object_get(e, "message")));
  }
}

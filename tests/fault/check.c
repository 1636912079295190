/*
 * check.c - the end state of a round, read as an operator reads it, with
 * `larkctl ... -o json`:
 * - every Job applied reaches Succeeded within the settle deadline;
 * - every pod of those Jobs ran exactly once in each attempt it was
 *   given (the ran file has one "<pod> <attempt>" line per start), and
 *   its last attempt, which succeeded, did run;
 * - `larkctl status` shows every service up with LAG 0;
 * - `larkctl replay <view> --verify` holds for every view;
 * - the hostile user got nothing it should not have: no pull of another
 *   principal's consumer answered, no delivery or reply meant for
 *   another client overheard, nothing on lark.>; and its own status
 *   requests answered, else its probes prove nothing.
 * Each failure is one line on stderr starting "FAIL"; the count is
 * returned.
 */
#include "fault.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *const views[] = {"catalog", "scheduler", "dag",
                                    "ipam",    "signer",    "logs"};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

/* A list as `larkctl get -o json` prints it: an array, an object with
 * "items", or one object per line. Always an array (json_decref it). */
static json_t *
items_of(const char *text) {
  json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
  if (json_is_array(j))
    return j;
  json_t *items = json_incref(json_object_get(j, "items"));
  json_decref(j);
  if (json_is_array(items))
    return items;
  json_decref(items);
  json_t *a = json_array();
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n");
    json_t *o = json_loadb(p, n, 0, NULL);
    if (json_is_object(o))
      json_array_append(a, o);
    json_decref(o);
    p += n + (p[n] ? 1 : 0);
  }
  return a;
}

static const char *
str_of(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* The item named name in list a, or NULL. */
static json_t *
find_named(json_t *a, const char *name) {
  size_t i;
  json_t *o;
  json_array_foreach(a, i, o) if (!strcmp(str_of(o, "name"), name)) return o;
  return NULL;
}

static json_t *
get_list(fh *h, const char *kind) {
  static char out[1 << 20];
  if (fh_larkctl(h, 30, out, sizeof out, "get", kind, "--limit", "100000", "-o",
                 "json", NULL) != 0)
    return NULL;
  return items_of(out);
}

/* Wait for every applied Job to be Succeeded; failures counted. */
static int
check_jobs(fh *h) {
  int64_t end = fh_now_ms() + (int64_t)h->settle_s * 1000;
  for (;;) {
    json_t *jobs = get_list(h, "jobs");
    int pending = 0, failed = 0;
    for (int i = 0; i < h->njobs; i++) {
      json_t *j = jobs ? find_named(jobs, h->jobs[i]) : NULL;
      const char *phase = j ? str_of(j, "phase") : "(absent)";
      int done = !strcmp(phase, "Succeeded");
      pending += !done;
      if (!done && fh_now_ms() >= end)
        failed +=
            fail("Job %s is %s, not Succeeded, %d s after the faults",
                 h->jobs[i], phase[0] ? phase : "(no phase)", h->settle_s);
    }
    json_decref(jobs);
    if (!pending || fh_now_ms() >= end) {
      fh_log(h, "check: %d of %d Jobs Succeeded", h->njobs - pending, h->njobs);
      return failed;
    }
    fh_sleep_ms(2000);
  }
}

/* Starts of (pod, attempt) in the ran file. */
static int
ran_count(char *ran, size_t len, const char *pod, long attempt) {
  (void)len;
  int n = 0;
  char want[300];
  size_t wl = (size_t)snprintf(want, sizeof want, "%s %ld\n", pod, attempt);
  for (char *p = ran; (p = strstr(p, want)); p += wl)
    if (p == ran || p[-1] == '\n')
      n++;
  return n;
}

static char *
read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "re");
  *len = 0;
  if (!f)
    return calloc(1, 1);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = calloc(1, n > 0 ? (size_t)n + 1 : 1);
  if (buf && n > 0)
    *len = fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

/* One pod: no attempt started twice, its last attempt started once when
 * it Succeeded, no start of an attempt it was never given. */
static int
check_pod(json_t *pod, char *ran, size_t len) {
  const char *name = str_of(pod, "name"), *phase = str_of(pod, "phase");
  long last = (long)json_integer_value(json_object_get(pod, "attempt"));
  int failed = 0;
  for (long a = 0; a <= last + 1; a++) {
    int n = ran_count(ran, len, name, a);
    if (n > 1)
      failed += fail("pod %s ran %d times in attempt %ld", name, n, a);
    else if (a == last && n != 1 && !strcmp(phase, "Succeeded"))
      failed += fail("pod %s is Succeeded but its attempt %ld ran %d times",
                     name, a, n);
    else if (a > last && n)
      failed +=
          fail("pod %s ran attempt %ld, beyond its last (%ld)", name, a, last);
  }
  return failed;
}

static int
is_ours(const fh *h, const char *job) {
  for (int i = 0; i < h->njobs; i++)
    if (!strcmp(job, h->jobs[i]))
      return 1;
  return 0;
}

static int
check_pods(fh *h) {
  size_t len;
  char *ran = read_all(h->ran, &len);
  json_t *pods = get_list(h, "pods");
  int failed = 0, seen = 0;
  size_t i;
  json_t *p;
  if (!pods)
    failed += fail("larkctl get pods failed");
  json_array_foreach(pods, i, p) {
    if (!is_ours(h, str_of(p, "job")))
      continue;
    seen++;
    failed += check_pod(p, ran, len);
  }
  int lines = 0;
  for (size_t k = 0; k < len; k++)
    lines += ran[k] == '\n';
  fh_log(h, "check: %d pods of our Jobs, %d starts in %s", seen, lines, h->ran);
  json_decref(pods);
  free(ran);
  return failed;
}

/* Every service up with lag 0, within the deadline. */
static int
check_status(fh *h) {
  static char out[1 << 16];
  int64_t end = fh_now_ms() + 60000;
  char why[512] = "";
  for (;;) {
    int rc = fh_larkctl(h, 30, out, sizeof out, "status", "-o", "json", NULL);
    json_t *j = json_loads(out, 0, NULL), *v;
    size_t i;
    snprintf(why, sizeof why, rc ? "larkctl status exited %d" : "", rc);
    json_array_foreach(json_object_get(j, "services"), i, v) {
      if (!json_is_true(json_object_get(v, "expected")))
        continue;
      json_int_t lag = json_integer_value(json_object_get(v, "lag"));
      if (strcmp(str_of(v, "state"), "up") || lag)
        snprintf(why, sizeof why, "service %s is %s with lag %lld",
                 str_of(v, "name"), str_of(v, "state"), (long long)lag);
    }
    json_array_foreach(json_object_get(j, "streams"), i,
                       v) if (!strcmp(str_of(v, "name"), "LARK_EVENTS"))
        h->events_end = json_integer_value(json_object_get(v, "messages"));
    json_decref(j);
    if (!why[0])
      return 0;
    if (fh_now_ms() >= end)
      return fail("%s, 60 s after the Jobs settled", why);
    fh_sleep_ms(2000);
  }
}

/* `larkctl replay V --verify` for every view; an error that is not a
 * verdict (a service restarting) is asked again a few times. */
static int
check_replays(fh *h) {
  static char out[1 << 14];
  char dir[PATH_MAX + 64];
  static int serial;
  int failed = 0;
  for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
    int rc = -1;
    json_t *j = NULL;
    for (int t = 0; t < 5; t++) {
      snprintf(dir, sizeof dir, "%s/replay-%s-%d", h->work, views[v], ++serial);
      rc = fh_larkctl(h, 120, out, sizeof out, "replay", views[v], "--verify",
                      "--out", dir, "-o", "json", NULL);
      json_decref(j);
      j = json_loads(out, 0, NULL);
      if (json_object_get(j, "equal"))
        break;
      fh_sleep_ms(3000);
    }
    if (json_is_false(json_object_get(j, "equal")))
      failed += fail("replay %s --verify: MISMATCH at seq %lld: live %s, "
                     "replay %s",
                     views[v],
                     (long long)json_integer_value(json_object_get(j, "seq")),
                     str_of(j, "live"), str_of(j, "replay"));
    else if (rc != 0 || !json_is_true(json_object_get(j, "equal")))
      failed +=
          fail("replay %s --verify gave no verdict (exit %d)", views[v], rc);
    else
      fh_log(h, "check: replay %s --verify holds at seq %lld", views[v],
             (long long)json_integer_value(json_object_get(j, "seq")));
    json_decref(j);
    char rm[PATH_MAX + 80];
    snprintf(rm, sizeof rm, "rm -rf %s/replay-*", h->work);
    if (system(rm) != 0)
      fh_log(h, "check: cannot remove %s/replay-*", h->work);
  }
  return failed;
}

static int
check_hostile(fh *h) {
  const fh_counts *n = &h->n;
  int failed = 0;
  if (n->pulls_answered)
    failed += fail("the user's pulls from other principals' consumers were "
                   "answered %d times (%d with an event)",
                   n->pulls_answered, n->pulls_events);
  if (n->inbox_deliveries)
    failed += fail("the user overheard %d deliveries of other principals' "
                   "consumers on _INBOX.>",
                   n->inbox_deliveries);
  if (n->lark_msgs)
    failed += fail("the user received %d messages on lark.>", n->lark_msgs);
  if (n->controls && !n->controls_ok)
    failed += fail("the user got no answer to any of %d status requests: "
                   "its probes prove nothing",
                   n->controls);
  if (n->inbox_other)
    failed += fail("the user overheard %d replies meant for other clients",
                   n->inbox_other);
  if (n->first_leak[0])
    fh_log(h, "check: first leak: %s", n->first_leak);
  return failed;
}

int
fh_check_end(fh *h) {
  int failed = 0;
  if (h->n.apply_failures)
    failed += fail("%d applies never succeeded", h->n.apply_failures);
  failed += check_jobs(h);
  failed += check_pods(h);
  failed += check_status(h);
  failed += check_replays(h);
  failed += check_hostile(h);
  return failed;
}

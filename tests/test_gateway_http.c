/*
 * test_gateway_http.c - lark-gateway over plain HTTP against a real
 * platform (`larkctl up --nodes 1`), driven with the curl command line:
 *
 *   - the login token (Bearer, ?token=, the cookie a page load sets), 401
 *     without it, /healthz and /readyz open; writes by the cookie refused
 *     without X-Lark-Request or from another Origin; a body over the limit
 *     413; plain HTTP beyond loopback and a readable token file refused;
 *     static files without ".."; every service's status;
 *   - a Job applied by POST seen Running then Succeeded through a watch,
 *     the list paged with limit/continue, one object read, ?at= before
 *     and during the run, errors with their field paths;
 *   - the audit tail (JSON lines, SSE), a Job's logs (text, JSON) and
 *     /metrics answered through their routes;
 *   - a watch resumed from a resourceVersion across a kill -9 and restart
 *     of the gateway gives exactly the changes an unbroken watcher (on a
 *     second gateway) saw: no gap, no duplicate.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "gwbed.h"
#include "proc.h"
#include "wait.h"

#define API "/api/v1/rlinf.io/v1alpha1"

static lt_platform plat;
static lt_gw gw;
static char base[128], body[1 << 16];

static void
up(void) {
  static const char *const nodes[] = {"--nodes", "1", NULL};
  lt_platform_ready(&plat, "gwhttp", nodes);
  lt_gw_init(&gw, &plat, "gw-a");
  lt_gw_start(&gw, 1, NULL);
  lt_gw_url(&gw, base, sizeof base);
}

static void
down(void) {
  lt_gw_stop(&gw, SIGTERM);
  lt_platform_end(&plat);
}

TestSuite(gateway_http, .init = up, .fini = down, .timeout = 240);

#define bearer(fmt, ...)                                                       \
  lt_curl(body, sizeof body, "-H 'Authorization: Bearer %s' " fmt, gw.token,   \
          __VA_ARGS__)

static const char job_fmt[] =
    "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"tasks\":[{\"name\":\"main\","
    "\"role\":\"Actor\",\"replicas\":1,\"resources\":{\"cpu\":1,"
    "\"memory\":64},\"runtime\":{\"raw\":{\"entrypoint\":[\"/bin/sh\","
    "\"-c\",\"echo hello; sleep %d\"]}}}]}}";

/* POST a Job running `sleep secs`, retried while the node registers. */
static void
apply_job(const char *name, int secs) {
  char path[600], manifest[1024];
  snprintf(manifest, sizeof manifest, job_fmt, name, secs);
  snprintf(path, sizeof path, "%s/%s.json", plat.dir, name);
  cr_assert_eq(lt_write_file(path, "%s", manifest), 0);
  int code = 0;
  for (int i = 0; i < 100 && code != 201; i++, lt_sleep_ms(100))
    code = bearer("-X POST --data-binary @%s %s" API "/jobs", path, base);
  cr_assert_eq(code, 201, "apply %s: %d %s", name, code, body);
  cr_assert(strstr(body, "\"ok\":true") && strstr(body, "\"seq\":"), "%s",
            body);
}

static int
file_has(const char *path, const char *what) {
  static char buf[1 << 18];
  return lt_read_file(path, buf, sizeof buf) && strstr(buf, what);
}

/* ------------------------------------------------------------------ auth */

static void
token_cookie_and_open_probes(void) {
  cr_assert_eq(lt_curl(body, sizeof body, "%s/healthz", base), 200);
  cr_assert_eq(lt_curl(body, sizeof body, "%s/readyz", base), 200, "%s", body);
  cr_assert_eq(lt_curl(body, sizeof body, "%s" API "/pods", base), 401);
  cr_assert(strstr(body, "\"code\":\"AUTH\""), "%s", body);
  cr_assert_eq(lt_curl(body, sizeof body, "%s/metrics", base), 401);
  cr_assert_eq(lt_curl(body, sizeof body,
                       "-H 'Authorization: Bearer %.31sx' %s" API "/pods",
                       gw.token, base),
               401);
  cr_assert_eq(bearer("%s" API "/pods", base), 200, "%s", body);
  cr_assert(strstr(body, "\"kind\":\"PodList\""), "%s", body);
  cr_assert_eq(
      lt_curl(body, sizeof body, "'%s" API "/nodes?token=%s'", base, gw.token),
      200);
  /* a page loaded with ?token= sets the cookie; the cookie alone reads */
  cr_assert_eq(lt_curl(body, sizeof body, "-i '%s/?token=%s'", base, gw.token),
               200, "%s", body);
  char want[200];
  snprintf(want, sizeof want,
           "lark_token=%s; HttpOnly; SameSite=Strict; Path=/", gw.token);
  cr_assert(strstr(body, want), "no cookie in %s", body);
  cr_assert_eq(lt_curl(body, sizeof body, "-b 'lark_token=%s' %s" API "/jobs",
                       gw.token, base),
               200);
  cr_assert_eq(
      lt_curl(body, sizeof body, "-b 'lark_token=nope' %s" API "/jobs", base),
      401);
}

static void
cross_site_writes_refused(void) {
  const char *stop = API "/jobs/nosuch/stop";
  cr_assert_eq(lt_curl(body, sizeof body, "-X POST -b 'lark_token=%s' %s%s",
                       gw.token, base, stop),
               403, "%s", body);
  cr_assert_eq(lt_curl(body, sizeof body,
                       "-X POST -b 'lark_token=%s' -H 'X-Lark-Request: 1' "
                       "-H 'Origin: http://evil.example' %s%s",
                       gw.token, base, stop),
               403, "%s", body);
  /* same origin with the header: through to lark-scheduler, which knows
   * no such Job */
  cr_assert_eq(lt_curl(body, sizeof body,
                       "-X POST -b 'lark_token=%s' -H 'X-Lark-Request: 1' "
                       "-H 'Origin: %s' %s%s",
                       gw.token, base, base, stop),
               404, "%s", body);
  cr_assert(strstr(body, "\"code\":\"NOT_FOUND\""), "%s", body);
  /* Bearer is no cookie: a page of another site cannot send it */
  cr_assert_eq(bearer("-X DELETE %s" API "/jobs/nosuch", base), 404);
}

static void
body_limit(void) {
  char path[600];
  snprintf(path, sizeof path, "%s/big.json", plat.dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  for (int i = 0; i < (1 << 20) / 16 + 1; i++)
    fputs("                ", f);
  fclose(f);
  cr_assert_eq(bearer("-X POST --data-binary @%s %s" API "/jobs", path, base),
               413, "%s", body);
  cr_assert(strstr(body, "TOO_BIG"), "%s", body);
}

static void
refused_settings(void) {
  char bin[512], out[4096], url[512], path[600];
  lt_bin("lark-gateway", bin, sizeof bin);
  snprintf(path, sizeof path, "%s/url", plat.dir);
  lt_read_file(path, url, sizeof url);
  url[strcspn(url, "\n")] = 0;
  int rc = lt_sh(out, sizeof out, NULL, 0,
                 "%s --url %s --data %s/x --http 0.0.0.0:0 --token-file %s "
                 "2>&1",
                 bin, url, plat.dir, gw.token_file);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "loopback"), "%s", out);
  rc = lt_sh(out, sizeof out, NULL, 0,
             "%s --url %s --data %s/x --http 127.0.0.1:0 2>&1", bin, url,
             plat.dir);
  cr_assert_eq(rc, 2, "%s", out);
  snprintf(path, sizeof path, "%s/open.token", plat.dir);
  lt_write_file(path, "%s\n", gw.token);
  chmod(path, 0644);
  rc = lt_sh(out, sizeof out, NULL, 0,
             "%s --url %s --data %s/x --http 127.0.0.1:0 --token-file %s 2>&1",
             bin, url, plat.dir, path);
  cr_assert_eq(rc, 2, "%s", out);
  cr_assert(strstr(out, "chmod 600"), "%s", out);
}

static void
status_of_services(void) {
  cr_assert_eq(bearer("%s/api/v1/status", base), 200, "%s", body);
  cr_assert(strstr(body, "{\"name\":\"scheduler\",\"state\":\"up\""), "%s",
            body);
  cr_assert(strstr(body, "{\"name\":\"gw-a\",\"state\":\"up\""), "%s", body);
}

static void
static_files(void) {
  cr_assert_eq(bearer("%s/", base), 200, "%s", body);
  cr_assert(strstr(body, "<html") || strstr(body, "<!doctype") ||
                strstr(body, "<!DOCTYPE"),
            "%.200s", body);
  cr_assert_eq(bearer("%s/index.html", base), 200);
  cr_assert_eq(bearer("--path-as-is %s/../../../etc/passwd", base), 404);
  cr_assert_eq(bearer("--path-as-is %s/%%2e%%2e/%%2e%%2e/etc/passwd", base),
               404);
  cr_assert_eq(bearer("%s/nosuch.js", base), 404);
}

/* One platform for the checks above: each starts nothing of its own. */
Test(gateway_http, auth_limits_and_files) {
  token_cookie_and_open_probes();
  cross_site_writes_refused();
  body_limit();
  refused_settings();
  static_files();
  status_of_services();
}

/* ---------------------------------------------------------- REST, watch */

Test(gateway_http, errors_with_field_paths) {
  char path[600];
  snprintf(path, sizeof path, "%s/bad.json", plat.dir);
  lt_write_file(path, "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Job\","
                      "\"metadata\":{\"name\":\"bad\"},\"spec\":{\"tasks\":[{"
                      "\"name\":\"a\",\"role\":\"Actor\",\"replicas\":0,"
                      "\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]}}");
  cr_assert_eq(bearer("-X POST --data-binary @%s %s" API "/jobs", path, base),
               422, "%s", body);
  cr_assert(strstr(body, "\"path\":\"spec.tasks[0].replicas\""), "%s", body);
  cr_assert_eq(bearer("-X POST -H 'Content-Type: application/yaml' "
                      "--data-binary 'kind: [' %s" API "/jobs",
                      base),
               400, "%s", body);
  cr_assert(strstr(body, "MALFORMED"), "%s", body);
  cr_assert_eq(
      bearer("-X POST --data-binary @%s %s" API "/workflows", path, base), 422,
      "%s", body);
  cr_assert(strstr(body, "\"path\":\"kind\""), "%s", body);
  cr_assert_eq(bearer("%s" API "/jobs/nosuch", base), 404, "%s", body);
  cr_assert(strstr(body, "NOT_FOUND"), "%s", body);
  cr_assert_eq(bearer("%s" API "/widgets", base), 404);
  cr_assert_eq(bearer("'%s" API "/pods?continue=%%21%%21'", base), 400, "%s",
               body);
  cr_assert_eq(bearer("'%s" API "/pods?limit=x'", base), 400);
  cr_assert_eq(bearer("'%s" API "/pods?at=yesterday'", base), 400);
}

/* "TIME" as unix seconds with a fraction, for ?at=. */
static void
now_arg(char *out, size_t cap) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(out, cap, "%lld.%03ld", (long long)ts.tv_sec, ts.tv_nsec / 1000000);
}

Test(gateway_http, apply_watch_list_at) {
  char watch[600], before[40], during[40];
  snprintf(watch, sizeof watch, "%s/watch-jobs.out", plat.dir);
  now_arg(before, sizeof before);
  pid_t w = lt_curl_bg(watch,
                       "-H 'Authorization: Bearer %s' '%s" API "/jobs?watch=1'",
                       gw.token, base);
  lt_sleep_ms(300);
  apply_job("hello", 3);
  int running = 0;
  for (int i = 0; i < 600 && !running; i++, lt_sleep_ms(100))
    running = file_has(watch, "\"phase\":\"Running\"");
  now_arg(during, sizeof during);
  cr_assert(running, "the watch never showed Running");
  int done = 0;
  for (int i = 0; i < 600 && !done; i++, lt_sleep_ms(100))
    done = file_has(watch, "\"phase\":\"Succeeded\"");
  lt_kill(w, SIGTERM);
  cr_assert(done, "the watch never showed Succeeded");
  cr_assert(file_has(watch, "{\"type\":\"ADDED\",\"object\":{"));
  /* one object, now and then */
  cr_assert_eq(bearer("%s" API "/jobs/hello", base), 200, "%s", body);
  cr_assert(strstr(body, "\"resourceVersion\":\""), "%s", body);
  cr_assert(strstr(body, "Succeeded"), "%s", body);
  cr_assert_eq(bearer("'%s" API "/jobs/hello?at=%s'", base, before), 404, "%s",
               body);
  cr_assert_eq(bearer("'%s" API "/jobs/hello?at=%s'", base, during), 200);
  cr_assert(strstr(body, "Running") && !strstr(body, "Succeeded"), "%s", body);
  /* the list, paged */
  apply_job("hello-2", 0);
  cr_assert_eq(bearer("'%s" API "/jobs?limit=1'", base), 200);
  json_t *page = json_loads(body, 0, NULL);
  cr_assert(page, "%s", body);
  const char *cont = json_string_value(
      json_object_get(json_object_get(page, "metadata"), "continue"));
  cr_assert(cont, "no continue in %s", body);
  cr_assert_eq(json_array_size(json_object_get(page, "items")), 1);
  cr_assert_eq(bearer("'%s" API "/jobs?limit=1&continue=%s'", base, cont), 200,
               "%s", body);
  cr_assert(strstr(body, "\"hello-2\""), "%s", body);
  json_decref(page);
}

Test(gateway_http, watch_as_server_sent_events) {
  char out[600];
  snprintf(out, sizeof out, "%s/sse.out", plat.dir);
  pid_t w = lt_curl_bg(out,
                       "-H 'Authorization: Bearer %s' -H 'Accept: "
                       "text/event-stream' '%s" API "/nodes?watch=1'",
                       gw.token, base);
  int ok = 0;
  for (int i = 0; i < 100 && !ok; i++, lt_sleep_ms(100))
    ok = file_has(out, "event: ADDED\ndata: {\"type\":\"ADDED\"");
  lt_kill(w, SIGTERM);
  cr_assert(ok, "no SSE frame for node-1");
  cr_assert(file_has(out, "id: "));
}

/* The audit tail and a Job's logs, as routes: what they stream is
 * test_gateway_feeds's. */
Test(gateway_http, events_and_logs) {
  apply_job("talk", 0);
  char want[128];
  snprintf(want, sizeof want, "talk-main-0 hello");
  int ok = 0;
  for (int i = 0; i < 200 && !ok; i++, lt_sleep_ms(100))
    ok = bearer("'%s" API "/jobs/talk/logs?tail=5'", base) == 200 &&
         strstr(body, want);
  cr_assert(ok, "no log line \"%s\": %s", want, body);
  cr_assert_eq(bearer("'%s" API "/jobs/talk/logs?tail=5&o=json'", base), 200);
  cr_assert(strstr(body, "\"line\":\"hello\""), "%s", body);
  cr_assert_eq(bearer("'%s/api/v1/events?subject=lark.ev.job.talk'", base), 200,
               "%s", body);
  cr_assert(strstr(body, "\"type\":\"job.submitted\"") &&
                strstr(body, "\"actor\":\"admin\""),
            "%s", body);
  cr_assert_eq(bearer("-H 'Accept: text/event-stream' "
                      "'%s/api/v1/events?subject=lark.ev.job.talk&limit=1'",
                      base),
               200, "%s", body);
  cr_assert(strstr(body, "id: ") && strstr(body, "\ndata: {"), "%s", body);
  cr_assert_eq(bearer("'%s/api/v1/events?since=never'", base), 400);
  cr_assert_eq(bearer("'%s/api/v1/status'", base), 200);
  cr_assert(strstr(body, "\"name\":\"scheduler\",\"state\":\"up\""), "%s",
            body);
  cr_assert_eq(bearer("%s/metrics", base), 200);
  cr_assert(strstr(body, "lark_"), "%.300s", body);
}

/* The changes of a watch output, one "rv type name" line each. */
static void
changes(const char *path, char *out, size_t cap, unsigned long long *last) {
  static char buf[1 << 18];
  cr_assert(lt_read_file(path, buf, sizeof buf), "%s", path);
  out[0] = 0;
  size_t n = 0;
  for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
    *nl = 0;
    json_t *j = json_loads(line, 0, NULL);
    json_t *md = json_object_get(json_object_get(j, "object"), "metadata");
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    const char *name = json_string_value(json_object_get(md, "name"));
    if (type && rv && strcmp(type, "BOOKMARK")) {
      n += (size_t)snprintf(out + n, cap - n, "%s %s %s\n", rv, type,
                            name ? name : "?");
      if (last)
        *last = strtoull(rv, NULL, 10);
    }
    json_decref(j);
  }
}

Test(gateway_http, watch_resumes_across_kill_9) {
  lt_gw other;
  lt_gw_init(&other, &plat, "gw-b");
  lt_gw_start(&other, 1, NULL);
  char obase[128], w0[600], w1[600], w2[600];
  lt_gw_url(&other, obase, sizeof obase);
  snprintf(w0, sizeof w0, "%s/w0.out", plat.dir);
  snprintf(w1, sizeof w1, "%s/w1.out", plat.dir);
  snprintf(w2, sizeof w2, "%s/w2.out", plat.dir);
  cr_assert_eq(bearer("%s" API "/pods", base), 200);
  json_t *l = json_loads(body, 0, NULL);
  unsigned long long rv0 =
      strtoull(json_string_value(json_object_get(json_object_get(l, "metadata"),
                                                 "resourceVersion")),
               NULL, 10);
  json_decref(l);
  pid_t p0 = lt_curl_bg(w0,
                        "-H 'Authorization: Bearer %s' '%s" API
                        "/pods?watch=1&resourceVersion=%llu'",
                        other.token, obase, rv0);
  pid_t p1 = lt_curl_bg(w1,
                        "-H 'Authorization: Bearer %s' '%s" API
                        "/pods?watch=1&resourceVersion=%llu'",
                        gw.token, base, rv0);
  apply_job("resume", 3);
  int seen = 0;
  for (int i = 0; i < 300 && !seen; i++, lt_sleep_ms(50))
    seen = file_has(w1, "\"resume-main-0\"");
  cr_assert(seen, "the first watch saw no pod change");
  lt_kill(p1, SIGKILL);
  lt_gw_stop(&gw, SIGKILL);
  char got1[8192], got2[8192], want[16384], both[16384];
  unsigned long long last = rv0;
  changes(w1, got1, sizeof got1, &last);
  lt_gw_start(&gw, 1, NULL);
  lt_gw_url(&gw, base, sizeof base);
  pid_t p2 = lt_curl_bg(w2,
                        "-H 'Authorization: Bearer %s' '%s" API
                        "/pods?watch=1&resourceVersion=%llu'",
                        gw.token, base, last);
  int done = 0;
  for (int i = 0; i < 600 && !done; i++, lt_sleep_ms(100))
    done = file_has(w0, "\"phase\":\"Succeeded\"");
  cr_assert(done, "the pod never Succeeded");
  lt_sleep_ms(1500); /* both watchers get the last change */
  lt_kill(p0, SIGTERM);
  lt_kill(p2, SIGTERM);
  lt_gw_stop(&other, SIGTERM);
  changes(w0, want, sizeof want, NULL);
  changes(w2, got2, sizeof got2, NULL);
  snprintf(both, sizeof both, "%s%s", got1, got2);
  cr_assert(strstr(want, "resume-main-0"), "%s", want);
  cr_assert_str_eq(both, want, "resumed:\n%s\nunbroken:\n%s", both, want);
}

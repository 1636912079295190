/*
 * test_cli_output.c - larkctl's output as kubectl users expect it, on a
 * real platform (`larkctl up --nodes 1`: broker, every service, one edge
 * node), larkctl run as a process:
 *
 *   - describe pod: times as RFC 3339 with their age, and the pod's story
 *     (Scheduled, Running, Failed, Retried, Succeeded) in one Events
 *     table, for a pod that fails once and is retried;
 *   - a Domain pod: describe domain shows its allocations as a table, and
 *     get pods -o wide both the local IP (what its node reported) and the
 *     virtual IP lark-ipam gave it;
 *   - -o yaml, read back by libyaml, equals -o json; -o name is kind/name;
 *   - larkctl version shows each service's version;
 *   - larkctl completion bash, loaded into bash, completes commands,
 *     kinds, -o forms and resource names.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "bed.h"
#include "events.h"
#include "bus.h"
#include "files.h"
#include "natsd.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

static lt_platform plat;
static char out[1 << 17], errout[1 << 14];

#define sh(...) lt_sh(out, sizeof out, errout, sizeof errout, __VA_ARGS__)

/* larkctl --data dir ARGS (shell words); stdout in out, stderr in errout */
#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, errout, sizeof errout, __VA_ARGS__)

static void
platform_up(void) {
  static const char *const nodes[] = {"--nodes", "1", NULL};
  lt_platform_ready(&plat, "cliout", nodes);
}

static void
platform_down(void) {
  lt_platform_end(&plat);
}

TestSuite(cli_output, .init = platform_up, .fini = platform_down,
          .timeout = 240);

/* apply text (a manifest), retried while the services start. */
static void
apply(const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.yaml", plat.dir, name);
  cr_assert_eq(lt_write_file(path, "%s", text), 0, "%s", path);
  lt_platform_apply(&plat, path, 10);
}

/* Wait until `get KIND NAME -o json` holds needle. */
static int
wait_get(const char *kind, const char *name, const char *needle, int secs) {
  for (int i = 0; i < secs * 10; i++) {
    if (ctl("get %s %s -o json", kind, name) == 0 && strstr(out, needle))
      return 1;
    lt_sleep_ms(100);
  }
  return 0;
}

/* ------------------------------------------------------- YAML read back */

static json_t *yaml_value(yaml_parser_t *p, yaml_event_t *ev);

/* A plain scalar resolved as YAML's core schema does; quoted: a string. */
static json_t *
yaml_scalar(const yaml_event_t *ev) {
  const char *v = (const char *)ev->data.scalar.value;
  char *end;
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return json_string(v);
  if (!strcmp(v, "null") || !strcmp(v, "~"))
    return json_null();
  if (!strcmp(v, "true") || !strcmp(v, "false"))
    return json_boolean(!strcmp(v, "true"));
  long long i = strtoll(v, &end, 10);
  if (*v && !*end)
    return json_integer(i);
  double d = strtod(v, &end);
  if (*v && !*end)
    return json_real(d);
  return json_string(v);
}

static json_t *
yaml_next(yaml_parser_t *p) {
  yaml_event_t ev;
  cr_assert(yaml_parser_parse(p, &ev), "yaml: %s", p->problem);
  json_t *j = yaml_value(p, &ev);
  yaml_event_delete(&ev);
  return j;
}

static json_t *
yaml_value(yaml_parser_t *p, yaml_event_t *ev) {
  json_t *j = NULL, *k;
  if (ev->type == YAML_SCALAR_EVENT)
    return yaml_scalar(ev);
  if (ev->type == YAML_SEQUENCE_START_EVENT) {
    j = json_array();
    while ((k = yaml_next(p)))
      json_array_append_new(j, k);
  } else if (ev->type == YAML_MAPPING_START_EVENT) {
    j = json_object();
    while ((k = yaml_next(p))) {
      cr_assert(json_is_string(k), "a map key that is not a string");
      json_object_set_new(j, json_string_value(k), yaml_next(p));
      json_decref(k);
    }
  }
  return j; /* NULL at the end of a list or map */
}

/* out as one YAML document. */
static json_t *
yaml_doc(const char *text) {
  yaml_parser_t p;
  yaml_event_t ev;
  cr_assert(yaml_parser_initialize(&p));
  yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
  json_t *j = NULL;
  for (int done = 0; !done;) {
    cr_assert(yaml_parser_parse(&p, &ev), "yaml: %s: %s", p.problem, text);
    if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
        ev.type == YAML_MAPPING_START_EVENT)
      j = yaml_value(&p, &ev);
    done = ev.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  return j;
}

/* `larkctl ARGS -o yaml` read back equals `larkctl ARGS -o json`. */
static void
yaml_is_json(const char *args) {
  cr_assert_eq(ctl("%s -o json", args), 0, "%s", errout);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert_not_null(j, "%s", out);
  cr_assert_eq(ctl("%s -o yaml", args), 0, "%s", errout);
  json_t *y = yaml_doc(out);
  cr_expect(json_equal(j, y), "%s: YAML %s is not the JSON form", args, out);
  json_decref(j);
  json_decref(y);
}

/* ------------------------------------------------------------ the story */

#define API "apiVersion: rlinf.io/v1alpha1\n"

static void
flaky_job(void) {
  char text[2048];
  snprintf(text, sizeof text,
           API "kind: Job\nmetadata: {name: flaky}\nspec:\n  tasks:\n"
               "  - name: a\n    role: Actor\n    replicas: 1\n"
               "    maxRetries: 1\n"
               "    resources: {cpu: 1, memory: 64}\n"
               "    raw:\n      entrypoint: [/bin/sh, -c, 'sleep 1; if [ -e "
               "%s/tried ]; then exit 0; fi; touch %s/tried; exit 3']\n",
           plat.dir, plat.dir);
  apply("flaky", text);
  cr_assert(wait_get("job", "flaky", "\"phase\":\"Succeeded\"", 90),
            "flaky never succeeded: %s", out);
}

/* Where needle starts in out, or NULL (and the test fails). */
static const char *
at(const char *needle) {
  const char *p = strstr(out, needle);
  cr_expect_not_null(p, "%s not in: %s", needle, out);
  return p ? p : out + strlen(out);
}

Test(cli_output, describe_pod_tells_its_story_with_times) {
  flaky_job();
  cr_assert_eq(ctl("describe pod flaky-a-0"), 0, "%s", errout);
  const char *events = at("\nEvents:\n");
  const char *sched = at(" Scheduled ");
  const char *run0 = at(" Running ");
  const char *failed = at(" Failed ");
  const char *retried = at(" Retried ");
  const char *ok = at(" Succeeded ");
  cr_expect(events < sched && sched < run0 && run0 < failed &&
                failed < retried && retried < ok,
            "not in order: %s", out);
  cr_expect(strstr(failed, "exit code 3"), "%s", out);
  cr_expect(strstr(retried, "attempt 1 assigned to node"), "%s", out);
  cr_expect(strstr(out, "Warning"), "%s", out);
  cr_expect(strstr(out, "TIME") && strstr(out, "REASON") &&
                strstr(out, "FROM") && strstr(out, "MESSAGE"),
            "%s", out);
  /* times as RFC 3339 with their age; no raw nanoseconds anywhere */
  regex_t time_re, ns_re;
  cr_assert_eq(regcomp(&time_re,
                       "20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9:.]+Z +[0-9]+s",
                       REG_EXTENDED),
               0);
  cr_assert_eq(regcomp(&ns_re, "[0-9]{16,}", REG_EXTENDED), 0);
  cr_expect_eq(regexec(&time_re, events, 0, NULL, 0), 0, "%s", out);
  cr_expect_neq(regexec(&ns_re, out, 0, NULL, 0), 0, "raw time: %s", out);
  regfree(&time_re);
  regfree(&ns_re);
  /* a job's ts shows as a time and an age */
  cr_assert_eq(ctl("describe job flaky"), 0, "%s", errout);
  cr_expect(strstr(out, " ago)"), "%s", out);
  cr_expect(!strstr(out, "{\""), "inline JSON: %s", out);
  /* the same story in the JSON form */
  cr_assert_eq(ctl("describe pod flaky-a-0 -o json"), 0, "%s", errout);
  cr_expect(strstr(out, "\"reason\":\"Retried\""), "%s", out);
  yaml_is_json("describe pod flaky-a-0");
  yaml_is_json("get pods");
  yaml_is_json("describe job flaky");
}

Test(cli_output, name_form_is_kind_slash_name) {
  flaky_job();
  cr_assert_eq(ctl("get pods -o name"), 0, "%s", errout);
  cr_expect_str_eq(out, "pod/flaky-a-0\n");
  cr_assert_eq(ctl("get jobs -o name"), 0, "%s", errout);
  cr_expect_str_eq(out, "job/flaky\n");
  cr_assert_eq(ctl("describe job flaky -o name"), 0, "%s", errout);
  cr_expect_str_eq(out, "job/flaky\n");
  cr_expect_eq(ctl("status -o name"), 2, "%s", out);
  /* the default form of get stays as scripts read it */
  cr_assert_eq(ctl("get jobs"), 0, "%s", errout);
  cr_expect(!strncmp(out, "NAME ", 5) && strstr(out, "\nflaky "), "%s", out);
}

/* ------------------------------------------------------- a Domain pod */

/* A node that takes Domain pods (raw+netns) without running them; the
 * test speaks for it on its ingress, as its edge agent would. */
static void
domain_setup(void) {
  apply("vnode", API "kind: Node\nmetadata: {name: vnode}\nspec:\n"
                     "  cluster: c9\n  runtimes: [raw, raw+netns]\n"
                     "  capacity: {cpu: 8, memory: 8192, gpu: 0}\n");
  apply("dom", API "kind: Domain\nmetadata: {name: d1}\n"
                   "spec: {cidr: 10.9.0.0/24}\n");
  apply("dj", API "kind: Job\nmetadata: {name: dj}\nspec:\n  domain: d1\n"
                  "  tasks:\n  - name: a\n    role: Actor\n    replicas: 1\n"
                  "    resources: {cpu: 1, memory: 64}\n"
                  "    raw: {entrypoint: [/bin/true]}\n");
}

/* vnode reports its pod Running at local address 192.168.77.2, on its
 * ingress as its agent would (the admin may write there). */
static void
report_running(void) {
  bus_conn *c = lt_platform_admin(&plat);
  cr_assert_not_null(c, "%s", bus_last_error());
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 4);
  const char *kv[] = {"pod",     "dj-a-0",  "phase",
                      "Running", "localIP", "192.168.77.2"};
  for (int i = 0; i < 6; i++)
    bus_pack_str(&b.pk, kv[i]);
  bus_pack_kv_uint(&b.pk, "attempt", 0);
  char id[33];
  bus_event ev;
  lt_event(&ev, id, "pod.report", "vnode", 1, 0, &b.sb);
  cr_assert_eq(bus_append(c, "lark.in.vnode.sched.pod.dj-a-0", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  bus_packbuf_destroy(&b);
  bus_conn_close(c);
}

Test(cli_output, domain_pod_shows_local_and_virtual_ip) {
  domain_setup();
  int ok = 0;
  for (int i = 0; i < 300 && !ok; i++, lt_sleep_ms(100))
    ok = ctl("describe domain d1 -o json") == 0 &&
         strstr(out, "\"pod\":\"dj-a-0\"");
  cr_assert(ok, "no allocation for dj-a-0: %s%s", out, errout);
  cr_assert_eq(ctl("describe domain d1"), 0, "%s", errout);
  const char *alloc = at("Allocations:\n");
  regex_t row;
  cr_assert_eq(regcomp(&row,
                       "^ +POD +IP +JOB +NODE +STATE *\n +dj-a-0 +10\\.9\\.0"
                       "\\.[0-9]+ +dj +vnode ",
                       REG_EXTENDED | REG_NEWLINE),
               0);
  cr_expect_eq(regexec(&row, alloc, 0, NULL, 0), 0, "%s", out);
  regfree(&row);
  cr_expect(!strstr(out, "[{"), "inline JSON: %s", out);
  yaml_is_json("describe domain d1");

  report_running();
  cr_assert(wait_get("pod", "dj-a-0", "192.168.77.2", 15), "%s", out);
  cr_assert_eq(ctl("get pods dj -o wide"), 0, "%s", errout);
  cr_expect(strstr(out, "VIRTUAL-IP"), "%s", out);
  regex_t both;
  cr_assert_eq(regcomp(&both,
                       "^dj-a-0 .* 192\\.168\\.77\\.2 +10\\.9\\.0\\.[0-9]+ ",
                       REG_EXTENDED | REG_NEWLINE),
               0);
  cr_expect_eq(regexec(&both, out, 0, NULL, 0), 0, "%s", out);
  regfree(&both);
  /* the story of a Domain pod says where its address came from */
  cr_assert_eq(ctl("describe pod dj-a-0"), 0, "%s", errout);
  cr_expect(strstr(out, " Addressed ") && strstr(out, "virtual IP 10.9.0."),
            "%s", out);
}

/* --------------------------------------------------------------- version */

Test(cli_output, version_shows_each_services_version) {
  json_t *j = NULL;
  size_t i, n = 0;
  json_t *svc;
  for (int t = 0; t < 50; t++, lt_sleep_ms(100)) {
    json_decref(j);
    cr_assert_eq(ctl("version -o json"), 0, "%s", errout);
    j = json_loads(out, 0, NULL);
    n = 0;
    json_array_foreach(json_object_get(j, "services"), i, svc) n +=
        json_is_string(json_object_get(svc, "version"));
    if (n >= 7)
      break;
  }
  const char *client = json_string_value(
      json_object_get(json_object_get(j, "client"), "version"));
  cr_assert_not_null(client, "%s", out);
  json_array_foreach(json_object_get(j, "services"), i, svc) {
    const char *name = json_string_value(json_object_get(svc, "name"));
    const char *v = json_string_value(json_object_get(svc, "version"));
    cr_expect(v && !strcmp(v, client), "%s reports %s, not %s", name,
              v ? v : "no version", client);
  }
  cr_expect_geq(n, 7, "%s", out);
  char want[64];
  snprintf(want, sizeof want, "%s", client);
  json_decref(j);
  cr_assert_eq(ctl("version"), 0, "%s", errout);
  char line[96];
  snprintf(line, sizeof line, "\nscheduler    %s\n", want);
  cr_expect(strstr(out, line), "%s", out);
  cr_expect(!strstr(out, "reports no version"), "%s", out);
  yaml_is_json("version");
}

/* ------------------------------------------------------------ completion */

/* What _larkctl offers for the words typed (the last one being
 * completed), as one line. */
static void
complete(const char *words) {
  char bin[512];
  snprintf(bin, sizeof bin, "%s", plat.larkctl);
  *strrchr(bin, '/') = 0;
  cr_assert_eq(sh("PATH=%s:$PATH bash -c 'source <(larkctl completion bash) "
                  "&& COMP_WORDS=(%s) && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) "
                  "&& _larkctl && echo \"${COMPREPLY[*]}\"'",
                  bin, words),
               0, "%s", errout);
}

Test(cli_output, bash_completion_completes_commands_kinds_and_names) {
  cr_assert_eq(sh("bash -c 'source <(%s completion bash); complete -p larkctl'",
                  plat.larkctl),
               0, "%s", errout);
  cr_expect(strstr(out, "complete -F _larkctl larkctl"), "%s", out);
  complete("larkctl de");
  cr_expect_str_eq(out, "delete describe\n");
  complete("larkctl get wor");
  cr_expect_str_eq(out, "workflow workflows\n");
  complete("larkctl get pods -o y");
  cr_expect_str_eq(out, "yaml\n");
  complete("larkctl completion \"\"");
  cr_expect_str_eq(out, "bash\n");
  complete("larkctl describe --l");
  cr_expect_str_eq(out, "--limit\n");
  flaky_job();
  char words[512];
  snprintf(words, sizeof words, "larkctl --data %s describe pod fl", plat.dir);
  complete(words);
  cr_expect_str_eq(out, "flaky-a-0\n");
  cr_expect_eq(ctl("completion zsh"), 2);
}

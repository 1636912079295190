/*
 * test_devices_cli.c - larkctl robot, get devices and describe device on
 * a real platform (`larkctl up --nodes 1`: broker, every service with
 * lark-devices among them, one edge node), larkctl run as a process; a
 * node with a robot and a camera spoken for by the test on its ingress,
 * as its agent would:
 *
 *   - get devices: NODE NAME KIND STATE MODE HOLDER, -o json, -o name,
 *     --at (the devices view replayed);
 *   - robot start/mode/stop/reset go through (exit 0) and refusals print
 *     their code and exit 1; a held robot needs --force;
 *   - robot status and robot modes; describe device shows the row and
 *     its Events (who commanded it, the force over its holder);
 *   - get devices -w prints the change a command makes;
 *   - usage errors exit 2; status lists devices; replay devices --verify;
 *     completion offers robot's verbs.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "bus.h"
#include "events.h"
#include "json.h"
#include "platform.h"
#include "proc.h"
#include "stream.h"
#include "wait.h"

static lt_platform plat;
static char out[1 << 16], errout[1 << 14];

#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, errout, sizeof errout, __VA_ARGS__)
#define sh(...) lt_sh(out, sizeof out, errout, sizeof errout, __VA_ARGS__)

/* type with data (JSON) appended on subject as actor, on top of the
 * subject's last event (a version check as its writer makes). */
static void
say(const char *subject, const char *type, const char *actor,
    const char *json) {
  bus_conn *c = lt_platform_admin(&plat);
  cr_assert_not_null(c, "%s", bus_last_error());
  json_error_t je;
  json_t *j = json_loads(json, 0, &je);
  cr_assert_not_null(j, "%s: %s", json, je.text);
  bus_packbuf b;
  bus_packbuf_init(&b);
  lt_pack_json(&b.pk, j);
  json_decref(j);
  char id[33];
  bus_event ev;
  uint64_t prev = strncmp(subject, "lark.ev.", 8)
                      ? 0
                      : lt_last_on(c, "LARK_EVENTS", subject, NULL, 0);
  lt_event(&ev, id, type, actor, bus_wall_ns(), prev, &b.sb);
  cr_assert_eq(bus_append(c, subject, &ev,
                          prev ? BUS_APPEND_CHECK : BUS_APPEND_NOCHECK, NULL,
                          NULL),
               0, "%s: %s", subject, bus_last_error());
  bus_packbuf_destroy(&b);
  bus_conn_close(c);
}

static void
platform_up(void) {
  static const char *const nodes[] = {"--nodes", "1", NULL};
  lt_platform_ready(&plat, "devcli", nodes);
  /* n9 registers a robot and a camera, as its agent would */
  say("lark.in.n9.sched.node", "node.registered", "n9",
      "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Node\","
      "\"metadata\":{\"name\":\"n9\"},\"spec\":{\"cluster\":\"c9\","
      "\"runtimes\":[\"raw\"],\"capacity\":{\"cpu\":8,\"memory\":1024},"
      "\"devices\":[{\"name\":\"arm-1\",\"kind\":\"ros\",\"modes\":"
      "[\"idle\",\"pick\"]},{\"name\":\"wrist\",\"kind\":\"camera\","
      "\"source\":\"pattern\",\"width\":64,\"height\":48}]}}");
  for (int i = 0; i < 100; i++, lt_sleep_ms(100))
    if (ctl("get devices") == 0 && strstr(out, "arm-1"))
      return;
  cr_assert_fail("n9's devices never listed: %s%s", out, errout);
}

static void
platform_down(void) {
  lt_platform_end(&plat);
}

TestSuite(devices_cli, .init = platform_up, .fini = platform_down,
          .timeout = 240);

/* Wait (10 s) until `ARGS` prints needle. */
static int
prints(const char *needle, const char *args) {
  for (int i = 0; i < 100; i++, lt_sleep_ms(100))
    if (ctl("%s", args) == 0 && strstr(out, needle))
      return 1;
  cr_log_error("larkctl %s: no %s in %s%s", args, needle, out, errout);
  return 0;
}

Test(devices_cli, get_devices_lists_every_device) {
  cr_assert_eq(ctl("get devices"), 0, "%s", errout);
  cr_expect(strstr(out, "NODE") && strstr(out, "NAME") && strstr(out, "KIND") &&
                strstr(out, "STATE") && strstr(out, "MODE") &&
                strstr(out, "HOLDER"),
            "%s", out);
  cr_expect(strstr(out, "wrist") && strstr(out, "camera"), "%s", out);
  cr_expect(strstr(out, "Stopped"), "%s", out);
  cr_assert_eq(ctl("get devices -o json"), 0, "%s", errout);
  cr_expect(strstr(out, "\"id\":\"n9/arm-1\"") && out[0] == '[', "%s", out);
  cr_assert_eq(ctl("get devices -o name"), 0, "%s", errout);
  cr_expect(strstr(out, "device/n9/arm-1\n"), "%s", out);
  cr_assert_eq(ctl("get devices n9/wrist -o yaml"), 0, "%s", errout);
  cr_expect(strstr(out, "wrist") && !strstr(out, "arm-1"), "%s", out);
  cr_expect_eq(ctl("get devices nope"), 0, "a node filter may match none");
  /* as it was a moment ago: a replay of the devices view */
  lt_sleep_ms(1100);
  cr_assert_eq(ctl("get devices n9 --at 1s"), 0, "%s", errout);
  cr_expect(strstr(out, "arm-1") && strstr(out, "wrist"), "%s", out);
  cr_assert_eq(ctl("status -o json"), 0, "%s", errout);
  cr_expect(strstr(out, "\"devices\""), "status lists lark-devices: %s", out);
}

Test(devices_cli, robot_commands_and_refusals) {
  cr_assert_eq(ctl("robot start n9/arm-1 --mode pick"), 0, "%s", errout);
  cr_expect(strstr(out, "robot/n9/arm-1 started in mode pick"), "%s", out);
  cr_expect(prints("Running", "robot status n9/arm-1"));
  cr_expect(strstr(out, "DESIRED") && strstr(out, "pick"), "%s", out);
  cr_expect_eq(ctl("robot start n9/arm-1 --mode fly"), 1);
  cr_expect(strstr(errout, "FIELD") && strstr(errout, "no mode fly"), "%s",
            errout);
  cr_expect_eq(ctl("robot stop n9/ghost"), 1);
  cr_expect(strstr(errout, "NOT_FOUND"), "%s", errout);
  cr_assert_eq(ctl("robot modes n9/arm-1"), 0, "%s", errout);
  cr_expect_str_eq(out, "idle (default)\npick\n");
  cr_assert_eq(ctl("robot modes n9/arm-1 -o json"), 0, "%s", errout);
  cr_expect(strstr(out, "\"default\":\"idle\""), "%s", out);
  cr_assert_eq(ctl("robot mode n9/arm-1 idle -o json"), 0, "%s", errout);
  cr_expect(strstr(out, "\"result\":\"switched\"") && strstr(out, "\"seq\":"),
            "%s", out);
  cr_assert_eq(ctl("robot reset n9/arm-1"), 0, "%s", errout);
  cr_expect(prints("\"resets\":1", "robot status n9 -o json"));
  /* a pod holds it: refused unless forced, and the force is recorded */
  say("lark.ev.placement.lab", "job.placed", "lark-scheduler",
      "{\"pool\":\"lab\",\"job\":\"j\",\"bindings\":[{\"pod\":"
      "\"j-a-0\",\"task\":\"j-a\",\"node\":\"n9\",\"devices\":"
      "[\"robot/arm-1\"]}]}");
  cr_expect(prints("j-a-0", "get devices n9/arm-1"));
  cr_expect_eq(ctl("robot stop n9/arm-1"), 1);
  cr_expect(strstr(errout, "CONFLICT") &&
                strstr(errout, "robot n9/arm-1 is held by pod j-a-0: use "
                               "--force"),
            "%s", errout);
  cr_assert_eq(ctl("robot stop n9/arm-1 --force"), 0, "%s", errout);
  cr_assert_eq(ctl("describe device n9/arm-1"), 0, "%s", errout);
  cr_expect(strstr(out, "Holder:") && strstr(out, "j-a-0"), "%s", out);
  cr_expect(strstr(out, "Events:") && strstr(out, "Commanded") &&
                strstr(out, "forced over holder j-a-0") &&
                strstr(out, "start mode pick"),
            "%s", out);
  cr_assert_eq(ctl("describe device n9/arm-1 -o json"), 0, "%s", errout);
  cr_expect(strstr(out, "\"events\":[") && strstr(out, "\"object\":{"), "%s",
            out);
  cr_assert_eq(ctl("replay devices --verify"), 0, "%s%s", out, errout);
}

Test(devices_cli, get_devices_watch_prints_a_change) {
  int rc = sh("cd %s && ( sleep 2; %s --data %s robot start n9/arm-1 "
              ">/dev/null ) & timeout 6 %s --data %s get devices -w -o json",
              plat.dir, plat.larkctl, plat.dir, plat.larkctl, plat.dir);
  cr_expect_eq(rc, 124, "-w runs until stopped: %s", errout);
  cr_expect(strstr(out, "\"event\":\"MODIFIED\"") &&
                strstr(out, "\"desired\":\"Running\""),
            "%s", out);
}

Test(devices_cli, usage_errors_and_completion) {
  cr_expect_eq(ctl("robot"), 2);
  cr_expect_eq(ctl("robot start arm-1"), 2, "no NODE/");
  cr_expect_eq(ctl("robot frob n9/arm-1"), 2);
  cr_expect_eq(ctl("robot mode n9/arm-1"), 2, "mode needs MODE");
  cr_expect_eq(ctl("robot status n9/arm-1 --force"), 2);
  cr_expect_eq(ctl("robot start N9/arm-1"), 2);
  cr_expect_eq(ctl("describe device n9/nope"), 1);
  cr_assert_eq(ctl("completion bash"), 0);
  cr_expect(strstr(out, "start stop reset mode status modes"), "%s", out);
}

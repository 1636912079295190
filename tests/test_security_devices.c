/*
 * test_security_devices.c - the broker's rules for the device subjects
 * lark.dev.<node>.>, against a real nats-server started with the config
 * larkctl renders (tests/support/secbed.c): only admin asks (an
 * operator's camera capture), only the node named subscribes, and the
 * node answers on the asker's inbox. A user, a service, a relay and
 * another node can neither ask nor listen. And a robot's desired state
 * on a node's stream reaches that node only: another node can neither
 * read it, write one, nor report or request for that node's robots.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "natsd.h"
#include "secbed.h"
#include "wait.h"

#define ASK "lark.dev.gpu-1.camera.wrist.capture"

/* Answers every request with "frame". */
static void
answer(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  (void)subject, (void)data, (void)len;
  atomic_fetch_add((atomic_int *)ud, 1);
  if (reply)
    bus_conn_publish(c, reply, "frame", 5);
}

/* gpu-1 serving its own device subjects; its request count in *n. */
static bus_conn *
node_serving(lt_sec *x, atomic_int *n, bus_serve **s) {
  bus_conn *c = NULL;
  cr_assert_eq(lt_sec_connect(x, "gpu-1", "_INBOX_gpu-1", &c), 0);
  cr_assert_eq(bus_conn_serve(c, "lark.dev.gpu-1.>", NULL, answer, n, s), 0,
               "a node subscribes to its own lark.dev: %s", bus_last_error());
  return c;
}

Test(security, only_admin_asks_a_node_device, .timeout = 90) {
  lt_sec x;
  lt_sec_up(&x);
  atomic_int asked = 0;
  bus_serve *s = NULL;
  bus_conn *n1 = node_serving(&x, &asked, &s);
  void *reply = NULL;
  size_t len = 0;
  cr_assert_eq(bus_conn_request(x.admin, ASK, "", 0, 2000, &reply, &len), 0,
               "admin asks, the node answers: %s", bus_last_error());
  cr_assert_eq(len, 5);
  cr_assert_eq(memcmp(reply, "frame", 5), 0);
  free(reply);
  const char *others[] = {"alice", "lark-catalog", "gpu-2", "relay-n1",
                          "relay-hub"};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    bus_conn *c = NULL;
    const char *inbox = strcmp(others[i], "gpu-2") ? "own" : "_INBOX_gpu-2";
    cr_assert_eq(lt_sec_connect(&x, others[i], inbox, &c), 0, "%s", others[i]);
    reply = NULL;
    int rc = bus_conn_request(c, ASK, "", 0, 1000, &reply, &len);
    cr_assert_eq(rc, BUS_EDENIED, "%s may not ask: %s", others[i],
                 bus_strerror(rc));
    free(reply);
    bus_conn_publish(c, "lark.dev.gpu-1.camera.wrist.capture", "x", 1);
    bus_conn_close(c);
  }
  lt_sleep_ms(300);
  cr_assert_eq(atomic_load(&asked), 1, "only admin's request reached gpu-1");
  bus_conn_unserve(s);
  bus_conn_close(n1);
  lt_sec_down(&x);
}

Test(security, node_hears_only_its_own_devices, .timeout = 90) {
  lt_sec x;
  lt_sec_up(&x);
  bus_conn *n1 = NULL;
  bus_serve *other = NULL, *wide = NULL, *own = NULL;
  atomic_int leaked = 0, mine = 0;
  cr_assert_eq(lt_sec_connect(&x, "gpu-1", "_INBOX_gpu-1", &n1), 0);
  bus_conn_serve(n1, "lark.dev.gpu-2.>", NULL, lt_count_cb, &leaked, &other);
  bus_conn_serve(n1, "lark.dev.>", NULL, lt_count_cb, &leaked, &wide);
  cr_assert_eq(
      bus_conn_serve(n1, "lark.dev.gpu-1.>", NULL, lt_count_cb, &mine, &own),
      0);
  lt_sleep_ms(200);
  bus_conn_publish(x.admin, "lark.dev.gpu-2.camera.wrist.capture", "x", 1);
  bus_conn_publish(x.admin, "lark.dev.gpu-1.camera.wrist.capture", "x", 1);
  for (int i = 0; i < 100 && atomic_load(&mine) == 0; i++)
    lt_sleep_ms(20);
  lt_sleep_ms(200);
  cr_assert_eq(atomic_load(&mine), 1, "its own device subjects must work");
  cr_assert_eq(atomic_load(&leaked), 0, "another node's device request leaked");
  bus_conn_unserve(own);
  bus_conn_unserve(wide);
  bus_conn_unserve(other);
  bus_conn_close(n1);
  lt_sec_down(&x);
}

/* A robot's desired state on gpu-1's stream reaches gpu-1 alone, and
 * gpu-2 can neither read it, write one for gpu-1, nor speak for gpu-1's
 * robots on the ingress (a robot.report or a pod's robot.request). */
Test(security, robot_commands_reach_only_their_node, .timeout = 90) {
  lt_sec x;
  lt_sec_up(&x);
  cr_assert_eq(
      bus_conn_publish(x.admin, "lark.node.gpu-1.robot.arm-1", "run", 3), 0);
  lt_sec_wait_seq(&x, OWN, 3);
  bus_conn *n2 = NULL;
  bus_consumer *k = NULL;
  cr_assert_eq(lt_sec_connect(&x, "gpu-2", "_INBOX_gpu-2", &n2), 0);
  const char *durables[] = {"edge-gpu-2", "edge-gpu-1"};
  for (size_t i = 0; i < 2; i++)
    cr_assert_lt(
        lt_sec_durable(n2, OWN, durables[i], "lark.node.gpu-1.robot.>", &k), 0,
        "gpu-2 opened %s on gpu-1's robots", durables[i]);
  cr_assert_lt(
      lt_sec_durable(n2, OTHER, "edge-gpu-2", "lark.node.gpu-1.robot.>", &k), 0,
      "a filter outside its own stream");
  uint64_t in = lt_sec_last_seq(&x, "LARK_INGRESS");
  const char *forged[] = {
      "lark.node.gpu-1.robot.arm-1", "lark.node.gpu-2.robot.arm-1",
      "lark.in.gpu-1.dev.robot.arm-1", "lark.in.gpu-1.dev.request.arm-1"};
  for (size_t i = 0; i < sizeof forged / sizeof *forged; i++)
    bus_conn_publish(n2, forged[i], "stop", 4);
  /* the control: its own ingress takes what it says of its own robots */
  cr_assert_eq(bus_conn_publish(n2, "lark.in.gpu-2.dev.robot.arm-1", "ok", 2),
               0);
  lt_sec_wait_seq(&x, "LARK_INGRESS", in + 1);
  cr_assert_eq(lt_sec_last_seq(&x, OWN), 3, "gpu-2 wrote gpu-1's desired");
  cr_assert_eq(lt_sec_last_seq(&x, OTHER), 1, "gpu-2 wrote its own desired");
  cr_assert_eq(lt_sec_last_seq(&x, "LARK_INGRESS"), in + 1,
               "gpu-2 spoke for gpu-1 on the ingress");
  cr_assert_eq(lt_sec_consumer_count(&x, OWN), 0, "consumers appeared");
  bus_conn_close(n2);
  lt_sec_down(&x);
}

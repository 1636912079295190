/*
 * test_robot_subnet.c - robot subnets: the addresses raw+netns pods get on
 * their robots' subnets, from the node's range, checked against the
 * store alone: each address held by one pod at a time, kept across a
 * reopen, free again once released; malformed subnets and ranges
 * refused.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "podnet.h"
#include "proc.h"
#include "root.h"
#include "store.h"
#include "wait.h"

static char dir[256];

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "subnet");
}

static void
teardown(void) {
  if (!getenv("LARK_KEEP"))
    lt_rmtree(dir);
}

TestSuite(robot_subnet, .init = setup, .fini = teardown, .timeout = 60);

/* ------------------------------------------- allocation, store alone */

static edge_subnet_want seg = {"rbpar0", "192.168.50.0/24", "192.168.50.100",
                               "192.168.50.101"};

Test(robot_subnet, store_gives_each_address_once_and_keeps_it_across_reopen) {
  char path[512];
  snprintf(path, sizeof path, "%s/store", dir);
  edge_store *s = NULL;
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  edge_subnets a, b, again;
  edge_subnet_want two[2] = {
      seg, {"rbpar1", "fd50::/64", "fd50::ffff:fffe", "fd50::1:0:5"}};
  cr_assert_eq(edge_store_subnet_claim(s, "pa", two, 2, &a), 0, "%s",
               bus_last_error());
  cr_assert_eq(a.n, 2);
  cr_assert_str_eq(a.v[0].ifname, "rb0");
  cr_assert_str_eq(a.v[0].parent, "rbpar0");
  cr_assert_str_eq(a.v[0].cidr, "192.168.50.0/24");
  cr_assert_str_eq(a.v[0].addr, "192.168.50.100");
  cr_assert_eq(a.v[0].plen, 24);
  cr_assert_str_eq(a.v[1].ifname, "rb1");
  cr_assert_str_eq(a.v[1].addr, "fd50::ffff:fffe");
  cr_assert_eq(a.v[1].plen, 64);
  cr_assert_eq(edge_store_subnet_claim(s, "pb", two, 2, &b), 0, "%s",
               bus_last_error());
  cr_assert_str_eq(b.v[0].addr, "192.168.50.101");
  cr_assert_str_eq(b.v[1].addr, "fd50::ffff:ffff");
  cr_assert_eq(edge_store_subnet_claim(s, "p6", &two[1], 1, &again), 0);
  cr_assert_str_eq(again.v[0].addr, "fd50::1:0:0", "carried");
  cr_assert_str_eq(again.v[0].ifname, "rb0");
  /* a pod holding them gets the same again */
  cr_assert_eq(edge_store_subnet_claim(s, "pa", two, 2, &again), 0);
  cr_assert_str_eq(again.v[0].addr, "192.168.50.100");
  edge_store_close(s);
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  cr_assert_eq(edge_store_subnet_get(s, "pb", &again), 0);
  cr_assert_str_eq(again.v[0].addr, "192.168.50.101");
  /* the range is full: refused, nothing claimed */
  cr_assert_eq(edge_store_subnet_claim(s, "pc", &seg, 1, &again), -ENOSPC);
  cr_assert(strstr(bus_last_error(), "no free address"), "%s",
            bus_last_error());
  cr_assert_eq(edge_store_subnet_get(s, "pc", &again), BUS_ENOT_FOUND);
  /* freeing hands it out again, to one pod only */
  cr_assert_eq(edge_store_subnet_del(s, "pa"), 0);
  cr_assert_eq(edge_store_subnet_del(s, "pa"), 0);
  cr_assert_eq(edge_store_subnet_claim(s, "pc", &seg, 1, &again), 0);
  cr_assert_str_eq(again.v[0].addr, "192.168.50.100");
  cr_assert_eq(edge_store_subnet_claim(s, "pd", &seg, 1, &again), -ENOSPC);
  edge_store_close(s);
}

Test(robot_subnet, store_refuses_malformed_subnets_and_ranges) {
  char path[512];
  snprintf(path, sizeof path, "%s/store", dir);
  edge_store *s = NULL;
  cr_assert_eq(edge_store_open(&s, path), 0, "%s", bus_last_error());
  edge_subnets r;
  const edge_subnet_want bad[] = {
      {"rbpar0", "192.168.50.1/24", "192.168.50.100", "192.168.50.101"},
      {"rbpar0", "192.168.50.0", "192.168.50.100", "192.168.50.101"},
      {"rbpar0", "192.168.50.0/24", "192.168.51.100", "192.168.51.101"},
      {"rbpar0", "192.168.50.0/24", "192.168.50.101", "192.168.50.100"},
      {"rbpar0", "192.168.50.0/24", "fd50::1", "fd50::2"},
      {"rbpar0", "192.168.50.0/24", "nonsense", "192.168.50.101"},
      {"", "192.168.50.0/24", "192.168.50.100", "192.168.50.101"},
      {"a-name-too-long-for-linux", "192.168.50.0/24", "192.168.50.100",
       "192.168.50.101"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(edge_store_subnet_claim(s, "pa", &bad[i], 1, &r), BUS_EINVAL,
                 "case %zu", i);
    cr_expect_eq(edge_store_subnet_get(s, "pa", &r), BUS_ENOT_FOUND);
  }
  edge_subnet_want many[EDGE_SUBNETS_MAX + 1];
  for (int i = 0; i <= EDGE_SUBNETS_MAX; i++)
    many[i] = seg;
  cr_expect_eq(edge_store_subnet_claim(s, "pa", many, EDGE_SUBNETS_MAX + 1, &r),
               BUS_EINVAL);
  edge_store_close(s);
}

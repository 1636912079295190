/*
 * devices_subnet.c - a robot's subnet in the device file: the interface
 * on the robot's segment, its cidr (a network: no host bits), the range
 * of addresses the node gives to pods ("first-last", inside the cidr) and
 * an optional gateway (inside the cidr, outside the range). Addresses are
 * kept in their canonical text, so two spellings of one address are one.
 */
#include <string.h>

#include "bus.h"
#include "devices-int.h"

enum { S_PARENT, S_CIDR, S_RANGE, S_GATEWAY, S_NKEYS };

static const char *const subnet_keys[S_NKEYS] = {"parent", "cidr", "range",
                                                 "gateway"};

/* An interface name as the kernel takes it: 1 to 15 bytes, no '/', no
 * space or colon, not "." or "..". */
static int
ifname_valid(const char *s) {
  size_t n = strlen(s);
  return n && n < 16 && strcmp(s, ".") && strcmp(s, "..") &&
         !strpbrk(s, "/: \t\n\r");
}

/* An address of net (a bare one) into out and its canonical text. */
static int
addr_in(dparse *p, int line, const char *what, const char *s,
        const bus_cidr *net, bus_cidr *out, char *text) {
  if (bus_cidr_parse(s, BUS_CIDR_BARE, out) ||
      out->prefix != (out->family == 4 ? 32 : 128)) {
    dp_problem(p, line, "subnet %s %.64s is not an address", what, s);
    return -1;
  }
  if (!bus_cidr_contains(net, out)) {
    dp_problem(p, line, "subnet %s %.64s is outside its cidr", what, s);
    return -1;
  }
  return bus_cidr_format_addr(out, text, EDGE_DEV_IP_SZ);
}

static int
addr_cmp(const bus_cidr *a, const bus_cidr *b) {
  return memcmp(a->addr, b->addr, sizeof a->addr);
}

/* The subnet's values against each other; lines[k] where key k was. */
static int
subnet_check(dparse *p, edge_dev_subnet *s, char *range, const int *lines,
             int start) {
  bus_cidr net, first, last, gw;
  char *dash = strchr(range, '-');
  if (!lines[S_PARENT] || !lines[S_CIDR] || !lines[S_RANGE])
    return dp_problem(p, start, "subnet needs parent, cidr and range");
  if (!ifname_valid(s->parent))
    return dp_problem(p, lines[S_PARENT],
                      "subnet parent %.64s is not an interface name",
                      s->parent);
  if (bus_cidr_parse(s->cidr, BUS_CIDR_NETWORK, &net))
    return dp_problem(p, lines[S_CIDR], "subnet cidr: %s", bus_last_error());
  if (!dash)
    return dp_problem(p, lines[S_RANGE], "subnet range must be first-last");
  *dash = 0;
  if (addr_in(p, lines[S_RANGE], "range", range, &net, &first, s->first) ||
      addr_in(p, lines[S_RANGE], "range", dash + 1, &net, &last, s->last))
    return -1;
  if (addr_cmp(&first, &last) > 0)
    return dp_problem(p, lines[S_RANGE], "subnet range ends before it starts");
  if (lines[S_GATEWAY] && addr_in(p, lines[S_GATEWAY], "gateway", s->gateway,
                                  &net, &gw, s->gateway))
    return -1;
  if (lines[S_GATEWAY] && addr_cmp(&gw, &first) >= 0 &&
      addr_cmp(&gw, &last) <= 0)
    return dp_problem(p, lines[S_GATEWAY],
                      "subnet gateway is inside its range");
  s->set = 1;
  return 0;
}

int
dp_read_subnet(dparse *p, edge_dev_subnet *s) {
  int start = dp_line(p), lines[S_NKEYS] = {0};
  char range[2 * EDGE_DEV_IP_SZ + 2] = "";
  if (p->ev.type != YAML_MAPPING_START_EVENT) {
    dp_problem(p, start,
               "subnet must be a mapping of parent, cidr, range "
               "and gateway");
    return dp_skip(p);
  }
  int more;
  while ((more = dp_each(p, YAML_MAPPING_END_EVENT)) > 0) {
    int line = dp_line(p), k = S_NKEYS;
    char key[16] = "";
    if (dp_str(p, "a subnet key", key, sizeof key) || dp_next(p))
      return -1;
    while (k > 0 && strcmp(key, subnet_keys[k - 1]))
      k--;
    if (!k || lines[k - 1]) {
      dp_problem(p, line,
                 k ? "subnet %s given twice" : "subnet: unknown key %s", key);
      if (dp_skip(p))
        return -1;
      continue;
    }
    lines[--k] = line;
    char *dst[S_NKEYS] = {s->parent, s->cidr, range, s->gateway};
    size_t cap[S_NKEYS] = {sizeof s->parent, sizeof s->cidr, sizeof range,
                           sizeof s->gateway};
    char what[24];
    snprintf(what, sizeof what, "subnet %s", key);
    if (dp_str(p, what, dst[k], cap[k]))
      return -1;
  }
  if (more)
    return -1;
  if (!p->pline)
    subnet_check(p, s, range, lines, start);
  return 0;
}

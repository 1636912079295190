/*
 * addrs.c - an address's rows, as apply (apply.c) and the domain events
 * (domains.c) both change them: the key a pod waits under in `ending`
 * while its address is held after its run, the address given back (its
 * `addrs` row gone, the domain's `used` and `low` moved), and a Job's
 * place in `wants` dropped. These call nothing else of apply.
 */
#include <stdio.h>
#include <string.h>

#include "ipam-int.h"

/* The key of the pod's `ending` row: "<domain>/<pod>". */
int
ipam__ending_key(const pod_rec *p, char *key, size_t cap) {
  return snprintf(key, cap, "%s/%s", p->domain, p->pod);
}

/* Give the pod's address back now. */
int
ipam__free_addr(bus_txn *t, pod_rec *p) {
  dom_rec d;
  unsigned char key[IPAM_NAME_SZ + 9];
  char ekey[IPAM_NAME_SZ + IPAM_DNAME_SZ];
  if (!p->held)
    return 0;
  int rc = ipam_dom_get(t, p->domain, &d);
  if (rc == 0) {
    if ((rc = bus_txn_del(t, "addrs", key, ipam_addr_key(d.name, p->off, key))))
      return rc;
    d.used -= d.used ? 1 : 0;
    if (p->off < d.low)
      d.low = p->off;
    rc = ipam_dom_put(t, &d);
  } else if (rc == BUS_ENOT_FOUND) {
    rc = 0;
  }
  int n = ipam__ending_key(p, ekey, sizeof ekey);
  if (!rc)
    rc = bus_txn_del(t, "ending", ekey, (size_t)n);
  p->held = 0;
  return rc;
}

int
ipam__drop_want(bus_txn *t, job_rec *j) {
  if (!j->want_seq)
    return 0;
  unsigned char key[2 * IPAM_NAME_SZ + 9];
  size_t n = ipam_addr_key(j->domain, j->want_seq, key);
  size_t jl = strlen(j->name);
  memcpy(key + n, j->name, jl);
  j->want_seq = 0;
  return bus_txn_del(t, "wants", key, n + jl);
}

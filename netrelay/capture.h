/*
 * capture.h - transparent capture of a pod's connections to its Domain's
 * prefix, inside the pod's network namespace (part of larkrelay; used by
 * lark-relay node).
 *
 * In the pod's namespace, relay_capture_up puts the pod's virtual
 * address on "lo", routes the Domain's prefix to "lo" (so Domain traffic
 * never leaves the namespace), installs an nftables table that redirects
 * TCP to that prefix to the capture port (table ip or ip6 "lark_relay",
 * replaced whole, so doing it again is harmless), and listens on the
 * loopback address at that port. A program in the pod then connects to
 * a virtual address as usual; the relay accepts the connection on the
 * listener and learns the address it wanted with relay_capture_target
 * (SO_ORIGINAL_DST).
 *
 * relay_capture_down removes the nftables table (the address and route
 * may stay: without the table, connections to the prefix are refused in
 * the namespace and never leave it). The caller closes the listener.
 *
 * Functions return 0 or a negative BUS_E* code with detail in
 * bus_last_error(); they need CAP_NET_ADMIN and may be called from any
 * thread (podnet.h does the namespace switching in threads of its own).
 */
#ifndef LARK_RELAY_CAPTURE_H
#define LARK_RELAY_CAPTURE_H

#include "routes.h"

#define RELAY_CAPTURE_PORT 15001 /* default capture port in every pod */

/*
 * Set up capture in namespace ns for a pod with virtual address vip in
 * the Domain's prefix cidr (both the same family), at port. On 0,
 * *listen_fd is a non-blocking listening socket inside ns (the caller
 * owns it). Done again with the same values, it changes nothing but
 * returns a new listener (the old one must be closed first, or the bind
 * fails with -EADDRINUSE).
 */
int relay_capture_up(const char *ns, const char *vip, const char *cidr,
                     int port, int *listen_fd);

/* Remove the redirect of cidr's family in ns; 0 when it was not there or
 * the namespace is gone. */
int relay_capture_down(const char *ns, const char *cidr);

/*
 * The address a captured connection fd was headed for: text into ip and
 * the port into *port. BUS_ENOT_FOUND when fd was not redirected.
 */
int relay_capture_target(int fd, char ip[RELAY_IP_MAX], int *port);

#endif

/*
 * relayc.h - the client side the relay tests share (test_relay_hub,
 * test_relay_weights): an echo server on a listening socket, and a libssh
 * session to the hub authenticated with a key and its certificate.
 */
#ifndef LT_RELAYC_H
#define LT_RELAYC_H

#include <stdatomic.h>

#include <libssh/libssh.h>

/*
 * Echo every connection accepted on the listening socket lfd (made
 * blocking here) back to its sender, each in a thread, until the process
 * ends; conns (may be NULL) counts the connections. Returns 0 or -1 (no
 * thread).
 */
int lt_echo_start(int lfd, atomic_int *conns);

/* A session to the hub at host:port authenticated as dir/name with
 * dir/name-cert.pub, or NULL. */
ssh_session lt_ssh_to_hub(const char *host, int port, const char *dir,
                          const char *name);

#endif

/*
 * ports.h - loopback TCP ports for the servers a test starts.
 */
#ifndef LARK_TEST_PORTS_H
#define LARK_TEST_PORTS_H

/* A loopback port nothing listens on now (the kernel's choice), or -1. */
int lt_free_port(void);

/* Whether something accepts connections on loopback port now (1 or 0). */
int lt_port_open(int port);

/* lt_port_open, tried every 100 ms for up to seconds. */
int lt_wait_port(int port, int seconds);

#endif

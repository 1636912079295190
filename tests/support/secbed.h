/*
 * secbed.h - the broker of the security tests, for Criterion tests: the
 * config larkctl renders (deploy/policy.c) with a principal of every role
 * (admin, lark-catalog, alice, nodes gpu-1 and gpu-2, relay-n1 of cluster
 * c1, relay-hub, gateway), each node's own stream holding desired states
 * (gpu-1: two, gpu-2: one), and what the tests append and count. Its calls fail
 * the test when they cannot do their part (library larkbed).
 */
#ifndef LARK_TEST_SECBED_H
#define LARK_TEST_SECBED_H

#include <jansson.h>

#include "bus.h"
#include "natsd.h"

typedef struct lt_sec {
  char data[256];     /* credentials, config and the broker's store */
  char conf[320];     /* data/nats.conf */
  char accounts[320]; /* data/accounts.conf */
  lt_natsd s;
  bus_conn *admin;
  msgpack_sbuffer body; /* {"text": "hello"}, every sample's data */
} lt_sec;

#define OWN "LARK_NODE_gpu-1"
#define OTHER "LARK_NODE_gpu-2"

void lt_sec_up(lt_sec *x);
void lt_sec_down(lt_sec *x);

/* Connect as principal name, JetStream wait 500 ms; inbox: a prefix,
 * "own" for _INBOX_<its key>, or NULL for the default. bus_conn_open's
 * code. */
int lt_sec_connect(lt_sec *x, const char *name, const char *inbox,
                   bus_conn **out);

/* stream's last sequence, as the admin sees it. */
uint64_t lt_sec_last_seq(lt_sec *x, const char *stream);
/* Wait up to 2 s for stream's last sequence to reach want; fail unless
 * it is want then. */
void lt_sec_wait_seq(lt_sec *x, const char *stream, uint64_t want);

/* A sample.created event with the sample body and a fresh id. */
void lt_sec_sample(lt_sec *x, bus_event *ev, char id[33]);
/* One sample appended on subject by the admin, unchecked. */
void lt_sec_put(lt_sec *x, const char *subject);

/* Names of the consumers on stream, as the admin sees them (json_decref
 * them); and how many there are. */
json_t *lt_sec_consumers(lt_sec *x, const char *stream);
size_t lt_sec_consumer_count(lt_sec *x, const char *stream);

/* A durable pull consumer on stream (filter) as c opens it: its code. */
int lt_sec_durable(bus_conn *c, const char *stream, const char *durable,
                   const char *filter, bus_consumer **k);

/* A bus_conn_serve callback counting into the atomic_int at ud. */
void lt_count_cb(bus_conn *c, const char *subject, const char *reply,
                 const void *data, size_t len, void *ud);

#endif

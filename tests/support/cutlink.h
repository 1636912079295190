/*
 * cutlink.h - a TCP link a test can cut: a relay on a loopback port to a
 * target port, whose connections the test breaks and whose port it stops
 * answering (cut), then answers again (mend) - a WAN link going down and
 * coming back, without root. Bytes are passed as they are (TLS goes
 * through untouched).
 */
#ifndef LARK_TEST_CUTLINK_H
#define LARK_TEST_CUTLINK_H

typedef struct lt_cutlink lt_cutlink;

/* Relay 127.0.0.1:<its port> to 127.0.0.1:target; NULL on failure. */
lt_cutlink *lt_cutlink_start(int target);
int lt_cutlink_port(const lt_cutlink *l);
/* Connections accepted so far. */
int lt_cutlink_accepted(const lt_cutlink *l);
/* Close every relayed connection and refuse new ones; then accept again
 * on the same port. */
void lt_cutlink_cut(lt_cutlink *l);
void lt_cutlink_mend(lt_cutlink *l);
void lt_cutlink_stop(lt_cutlink *l);

#endif

/*
 * secure.h - a broker with the platform's own accounts, as `larkctl
 * init` makes them: credentials in a directory, accounts.conf and a
 * single-server nats.conf rendered from them, and connections under a
 * principal's credentials.
 */
#ifndef LARK_TEST_SECURE_H
#define LARK_TEST_SECURE_H

#include "bus.h"
#include "natsd.h"

/* Render dir/accounts.conf from the credentials in dir. 0, or -1 with
 * lark_cfg_error(). */
int lt_render_accounts(const char *dir);

/*
 * lt_render_accounts, then dir/nats.conf for one server (its store under
 * dir), then lt_natsd_start with it. 0, or -1 with lark_cfg_error() or a
 * line on stderr.
 */
int lt_secure_natsd_start(lt_natsd *s, const char *dir);

/* Connect to url as principal name (its credentials in dir), named
 * "test"; js_wait_ms 0 keeps the client's default. bus_conn_open's code. */
int lt_connect_as(const char *url, const char *dir, const char *name,
                  int js_wait_ms, bus_conn **out);

#endif

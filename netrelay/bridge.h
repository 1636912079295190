/*
 * bridge.h - one SSH channel joined to one socket, both ways, with flow
 * control. Part of larkrelay; the hub and lark-relay node both use it.
 *
 * A bridge belongs to the thread that runs its session's ssh_event loop
 * and is only touched there. Nothing blocks: channel data goes to the
 * socket as far as the socket takes it; what it does not take stays in
 * the channel (libssh keeps it and the peer's window closes), and the
 * socket is then polled for POLLOUT to drain it. Socket data is read only
 * while the channel's window has room. EOF travels both ways (shutdown
 * SHUT_WR on the socket, ssh_channel_send_eof on the channel); a bridge
 * is done when both directions ended or either side failed.
 */
#ifndef LARK_RELAY_BRIDGE_H
#define LARK_RELAY_BRIDGE_H

#include <stdint.h>

#include <libssh/libssh.h>

typedef struct relay_bridge relay_bridge;

/*
 * Join ch (open, in session ssh, whose loop is ev) to fd (connected,
 * made non-blocking here); the bridge owns both from now on. Returns
 * NULL when out of memory (then both are closed).
 */
relay_bridge *relay_bridge_new(ssh_event ev, ssh_session ssh, ssh_channel ch,
                               int fd);
/*
 * Call after every ssh_event_dopoll round. libssh 0.10 raises a channel's
 * window on WINDOW_ADJUST without calling any callback, so a bridge that
 * stopped reading its socket on a full window learns here that it may
 * read again (and sends what it still holds).
 */
void relay_bridge_tick(relay_bridge *b);
/* Whether it is done (then relay_bridge_free it). */
int relay_bridge_done(const relay_bridge *b);
/* Bytes each way so far: channel to socket, socket to channel. */
void relay_bridge_bytes(const relay_bridge *b, uint64_t *to_fd,
                        uint64_t *to_ch);
/* Close the socket and the channel, and forget both. Call it from the
 * session's thread outside the event's callbacks (after
 * ssh_event_dopoll returns), never from inside one. */
void relay_bridge_free(relay_bridge *b);

#endif

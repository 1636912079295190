/*
 * drainer.h - a thread of its own that runs a round of work when kicked,
 * and once every period besides (a service's outbox drain, service.c).
 *
 * Kicks while a round runs are folded into one more round after it, so a
 * round sees everything committed before its kick. A round's failure is
 * kept and read by the kicker (bus__drainer_err); the thread goes on.
 */
#ifndef LARK_DRAINER_H
#define LARK_DRAINER_H

/* One round; kicked is 0 when the period passed without a kick. Non-zero:
 * a failure the owner must stop on. */
typedef int (*bus__drainer_fn)(void *ud, int kicked);

typedef struct bus__drainer bus__drainer;

int bus__drainer_start(bus__drainer **out, bus__drainer_fn fn, void *ud,
                       int period_ms);
void bus__drainer_kick(bus__drainer *d);
/* The first failure a round returned, 0 while there is none. */
int bus__drainer_err(bus__drainer *d);
/* Run a last round if a kick is pending, then end the thread and free it. */
void bus__drainer_stop(bus__drainer *d);

#endif

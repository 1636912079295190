/*
 * gateway_get.h - the pieces of bench_gateway_get: the events that make
 * its pods (gateway_events.c), fed to an in-process view or appended to a
 * broker, and the HTTP half (gateway_get_http.c) that the in-process half
 * (gateway_get.c, main) runs last. Each file calls only the ones below it.
 */
#ifndef LARK_BENCH_GATEWAY_GET_H
#define LARK_BENCH_GATEWAY_GET_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "gateway.h"

/* Where an event goes; the sequence it got. */
typedef uint64_t bench_gw_sink(void *ud, const char *subject, const char *type,
                               uint64_t prev, const msgpack_sbuffer *data);

/* Nodes n0.., then Jobs j0.. of one task "w" of pods pods, each placed on
 * its own node, as lark-scheduler writes them. */
void bench_gw_events(int jobs, int pods, bench_gw_sink *sink, void *ud);
/* The broker's sink: ud a bus_conn; a checked append. */
uint64_t bench_gw_append(void *ud, const char *subject, const char *type,
                         uint64_t prev, const msgpack_sbuffer *data);
/* Pods in a list's JSON. */
size_t bench_gw_items(const char *json);

/* GET of every pod from a real lark-gateway beside a static body. */
void bench_gateway_http(const char *argv0, int jobs, int pods, int rounds);

#endif

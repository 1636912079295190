/*
 * engine-ingress.h - the ingress's checks, apart from its loop so a fuzz
 * harness and the tests drive them on a view of their own: a message's
 * route (lark.in.<node>.engine.<stage|weights>.<name>) and what the view
 * says of a stage.report or weights.report from that node.
 */
#ifndef LARK_ENGINE_INGRESS_INT_H
#define LARK_ENGINE_INGRESS_INT_H

#include "engine-int.h"

typedef struct eng_route {
  char node[ENG_NAME_SZ];
  char what[16];         /* "stage" or "weights" */
  char name[ENG_POD_SZ]; /* the pod (stage) or the Job (weights) */
} eng_route;

enum { ENG_ACCEPT = 0, ENG_DUPLICATE = 1, ENG_REFUSE = 2, ENG_NOT_YET = 3 };

/* A check's answer: ENG_* and, unless accepted, why; the subject's
 * version to append on. */
typedef struct eng_verdict {
  int v;
  char why[256];
  uint64_t prev;
  int stage;
  uint64_t step;
} eng_verdict;

/* 0, or BUS_EINVAL when subject is not an engine ingress subject. */
int eng_route_parse(const char *subject, eng_route *r);
/* The checks, in t (a read transaction): 0 with *out set, or an error
 * reading the view. ENG_NOT_YET: refused by what the view says now (a
 * step not started, a pod not bound), which a view behind may change. */
int eng_check_stage(bus_txn *t, const eng_route *r,
                    const bus_ev_stage_report *rep, eng_verdict *out);
int eng_check_weights(bus_txn *t, const eng_route *r,
                      const bus_ev_weights_report *rep, eng_verdict *out);

#endif

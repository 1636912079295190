/*
 * workflow.h - Workflow resources for tests, written as one line:
 * "a; b: a; c: a b" is templates a, b and c, b depending on a and c on
 * a and b.
 */
#ifndef LARK_TEST_WORKFLOW_H
#define LARK_TEST_WORKFLOW_H

#include <msgpack.h>

/*
 * Pack the Workflow resource name (apiVersion rlinf.io/v1alpha1) whose
 * jobTemplates are dagspec's (at most 128, each with at most 64
 * dependencies), each a Job of one task "main" (role Actor, replicas
 * replicas) running `true`.
 */
void lt_pack_workflow(msgpack_packer *pk, const char *name, const char *dagspec,
                      int replicas);

#endif

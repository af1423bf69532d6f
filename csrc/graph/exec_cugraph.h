/* A cached tf.function call replayed as one CUDA graph: the eligibility
 * rule, the capture record, the counters. Note [CUDA graphs for cached
 * calls] in exec_cugraph.c. Plain C: the CUDA side is compiled only
 * with TFMINI_WITH_CUDA, and a build without it never captures. */
#ifndef TFM_GRAPH_EXEC_CUGRAPH_H
#define TFM_GRAPH_EXEC_CUGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "exec.h"

struct tfm_cugraph;

/* Whether plan p may be captured: every step placed on one device other
 * than the CPU, with a kernel there, and none that reads values on the
 * host or changes host state per call. Returns that device's index
 * (> 0), or 0 with why (n bytes) naming the first step that prevents
 * it. Pure: it reads the plan and the device table, touches nothing. */
int tfm_cugraph_eligible(const tfm_plan *p, char *why, size_t n);

/* The cached call's hook (graph/function.c): 1 when the call ran
 * through a CUDA graph (or its capture), with *rc its result and out[]
 * filled as tfm_plan_run fills it; 0 when the caller runs the plan the
 * plain way (not eligible, turned off, the first call, a fall-back). */
int tfm_cugraph_call(tfm_plan *p, tfm_tensor *const *in, int nin,
                     tfm_tensor **out, tfm_code *rc);

/* Drops p's record (tfm_plan_free). */
void tfm_cugraph_free(tfm_plan *p);

/* Totals since the process began, read by tests and tools through
 * ctypes: out[0] captures, [1] replays, [2] fall-backs (calls of an
 * eligible plan that ran the plain way after the first: a dropped or
 * failed record), [3] failures (capture, instantiate or replay errors),
 * [4] plans judged eligible, [5] plans judged not. */
void tfm_cugraph_counters(int64_t out[6]);

/* The latest verdict of tfm_cugraph_eligible on a cached call's plan
 * (1 eligible, 0 not, -1 none yet), its reason in buf (n bytes). */
int tfm_cugraph_last_verdict(char *buf, size_t n);

/* exec.c: tfm_plan_run (not recorded) with consts[c], where not NULL,
 * in place of the plan's constant c (the record's device copies of host
 * constants, so that the captured run copies nothing from the host). */
tfm_code tfm_plan_run_consts(const tfm_plan *p, tfm_tensor *const *in,
                             int nin, tfm_tensor **out,
                             tfm_tensor *const *consts);

#endif

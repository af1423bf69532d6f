/* The executor: a traced graph compiled to a flat plan (see DESIGN.md,
 * "Executor"). Nodes run in creation order, which is a topological order
 * and program order (Note [Side-effect order] in runtime/graph.c). Only
 * the nodes that feed an output or a side effect (assign, print) run.
 * Every node output has a slot; a slot is released right after its last
 * use, so a long chain holds two intermediates at a time, not all. Ops
 * whose shapes were all known at trace time call their kernel directly
 * into outputs allocated from the planned metas; the others (unknown
 * dims, float16 upcasts, big work that releases the interpreter lock) go
 * through tfm_run_kernel, the same path eager ops take. With the
 * "memory" pass on, the static-shape intermediates are views into one
 * arena per plan, laid out by live range and kept across calls, and
 * elementwise ops write over an input that dies at them (Note [Memory
 * plan] in exec.c). */
#ifndef TFM_GRAPH_EXEC_H
#define TFM_GRAPH_EXEC_H

#include "../runtime/graph.h"

typedef struct tfm_plan tfm_plan;

/* Compile g's inputs -> outputs (tfm_graph_set_outputs). The plan holds
 * a reference on g, which must be sealed. NULL with the error set. */
tfm_plan *tfm_plan_new(tfm_graph *g);
void tfm_plan_free(tfm_plan *p);
/* Nodes the plan runs (for tests of pruning). */
int tfm_plan_step_count(const tfm_plan *p);
/* Fused nodes it runs as machine code (Note [Native fused programs] in
 * fused.h), in this plan and the plans of its If/While bodies; with
 * `into`, their outputs it may write straight into variables (Note
 * [Fused writes into variables] in exec.c). */
int tfm_plan_native_count(const tfm_plan *p, int into);

/* The memory plan (Note [Memory plan] in exec.c), for tests and
 * inspection: the arena's size, the slots that live in it, the steps
 * that write over a dying input, and whether the arena is allocated
 * (it is kept from the first run on). */
typedef struct tfm_plan_memory {
    int64_t arena_bytes;
    int32_t arena_slots;
    int32_t inplace_steps;
    int arena_held;
} tfm_plan_memory;
void tfm_plan_memory_stats(const tfm_plan *p, tfm_plan_memory *out);
/* Note [Arena budget] in exec.c: idle arenas are released, least
 * recently run first, while all plans together hold more than this many
 * bytes (64 MB unless changed). */
extern size_t tfm_plan_arena_budget;
size_t tfm_plan_arena_held(void);

/* Run: in[i] feeds graph input i and must match its placeholder's dtype
 * and known dims; out[] receives a new reference per graph output.
 *
 * recorded = 1 replays the plan through the dispatcher (tfm_call) and
 * variable.c instead of calling kernels, so that active GradientTapes
 * record every op: that is how gradients flow through a traced function
 * called under a tape. */
tfm_code tfm_plan_run(const tfm_plan *p, tfm_tensor *const *in, int nin,
                      tfm_tensor **out, int recorded);

/* Note [Executor counters] in exec.c: totals since the process began,
 * for tests that check a loop's work per iteration without timing it
 * (read through ctypes on _C). */
typedef struct tfm_exec_counts {
    int64_t steps;          /* plan steps run, sub-graphs' included */
    int64_t fresh;          /* step outputs given memory of their own */
    int64_t iterations;     /* While bodies run */
} tfm_exec_counts;
void tfm_exec_counters(tfm_exec_counts *out);

/* Evaluate output r of a graph (possibly still being traced) now, by
 * running the nodes it depends on. Errors (ValueError) if it depends on
 * a function input. This lifts a tf.Variable's initial value computed
 * inside a trace out of the graph, as TF's init_scope does. */
tfm_code tfm_graph_eval(tfm_graph *g, tfm_ref r, tfm_tensor **out);

#endif

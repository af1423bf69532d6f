/* The plan's representation, private to the executor's files:
 * exec_plan.c builds plans (steps, slots, the memory plan), exec.c runs
 * them, exec_arena.c keeps their arenas within a budget. */
#ifndef TFM_EXEC_IMPL_H
#define TFM_EXEC_IMPL_H

#include "exec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/state.h"
#include "fused.h"
#include "../runtime/dispatch.h"
#include "../runtime/variable.h"
#include "exec_device.h"
#include "memplan.h"
#include "passes.h"

/* Work (elements in + out) from which a kernel goes through
 * tfm_run_kernel, which runs big kernels without the interpreter lock
 * (dispatch.c's UNLOCK_MIN_ELEMENTS). With the memory plan on, such
 * kernels are called into planned outputs through tfm_run_kernel_into,
 * which releases the lock the same way. */
#define DIRECT_MAX_WORK 65536

/* Note [Memory plan]
 * ~~~~~~~~~~~~~~~~~~
 * With the "memory" pass on (TFM_PASS_MEMORY when the plan is compiled),
 * the outputs of kernel steps and fused steps whose shapes are all
 * static live in one arena: each such slot's live range (the step that writes it .. the
 * last step that reads it) and byte size go to tfm_memplan_assign
 * (memplan.c), which gives slots that are never live together the same
 * bytes. A run then makes its intermediates as views into the arena
 * (tfm_tensor_view) instead of a malloc per output.
 *
 * In place: an elementwise step (or a single-output _FusedElementwise,
 * which writes each element after its last read of it: Note [Fused
 * programs]) whose input slot is planned, dies at this step and has the
 * output's dtype and size writes its output into that input's block (the block's live range grows to cover both). Only
 * planned slots qualify: a function input, a Const or a variable read
 * has other holders, and the plan never writes into memory it does not
 * own. The elementwise loops (kernels/cpu/loops.h) read element i
 * before they write element i, and with equal sizes the aliased input
 * is the full-shape operand of any broadcast, so out == in is exact (the
 * same property AssignAdd's in-place update relies on). Cast is left
 * out: its same-dtype path is a memcpy.
 *
 * Scatters into a tensor that nobody else holds write over it instead
 * (Note [Writing over a loop variable] in exec.c).
 *
 * Left out of the arena, with buffers of their own: graph outputs (they
 * outlive the call), the inputs of If and While steps (a branch may
 * return its input, which then lives on in the step's output slot with
 * a lifetime the plan does not see), values of unknown shape, and
 * everything a recorded run makes (the tape keeps its tensors).
 * Assignments copy the value into the variable's own buffer
 * (tfm_variable_assign_now), prints format it, so neither keeps a view.
 *
 * The arena is allocated on a plan's first run and kept for the next
 * ones (TF's allocator keeps its memory too), so that a call of a
 * static-shape function allocates nothing but its outputs and tensor
 * headers. Two runs of one plan at once (a print callback calling the
 * function again, or another thread while a big kernel runs without the
 * interpreter lock) must not share it: `busy` marks it taken, and a run
 * that finds it taken gets an arena of its own for the call. At the end
 * of a run every slot has been released, so the plan's reference should
 * be the arena's only one; if not, some tensor kept a view (a bug
 * elsewhere), and the plan lets go of the arena rather than reuse memory
 * someone still reads. */

/* Note [Views of live inputs] in exec.c. */
enum { VIEW_NONE, VIEW_SAME_BYTES, VIEW_ROW };

enum { STEP_KERNEL, STEP_READ, STEP_ASSIGN, STEP_PRINT, STEP_IF,
       STEP_WHILE, STEP_ASSERT, STEP_FUSED, STEP_COPY };

typedef struct step {
    const tfm_node *node;
    int32_t index;          /* the node's index, for errors */
    uint8_t kind, direct;
    uint8_t unlock;         /* direct, but big: may release the lock */
    uint8_t over_input;     /* may write over input 0 (Note [Writing
                             * over a loop variable] in exec.c) */
    uint8_t view;           /* VIEW_*: output is a view of input 0's
                             * buffer (Note [Views of live inputs]) */
    int32_t *in;            /* input slots */
    int32_t out;            /* first output slot */
    int32_t *free;          /* slots whose last use is this step */
    int32_t nfree;
    tfm_plan *sub[2];       /* If: then, else; While: cond, body */
    tfm_native_lazy native;      /* STEP_FUSED: compiled on first run */
    /* STEP_FUSED: per output, the variable it may be written into
     * (Note [Fused writes into variables]); NULL when none. */
    tfm_variable **into;
} step;

struct tfm_plan {
    tfm_graph *g;
    int32_t nslots, nsteps;
    step *steps;
    int32_t nin;
    int32_t *in_slot;       /* -1: input not used */
    const tfm_meta **in_meta;
    const char **in_name;
    int32_t nconst;
    int32_t *const_slot;
    tfm_tensor **const_val;
    int32_t nout;
    int32_t *out_slot;
    int32_t *pool;          /* step inputs and free lists */
    /* Note [Memory plan]: slot -> byte offset in the arena, -1 for a
     * slot with its own buffer; NULL when the plan has none. */
    int64_t *slot_off;
    size_t arena_bytes;
    int32_t ninplace;       /* steps that write over a dying input */
    tfm_buffer *arena;      /* kept between runs; NULL before the first */
    int busy;               /* a run is using arena */
    /* Note [Arena budget]: plans holding an arena, last run first. */
    tfm_plan *lru_prev, *lru_next;
    /* Note [CUDA graphs for cached calls] (exec_cugraph.c): the record
     * and the verdict (0 not judged yet, 1 eligible, -1 never). */
    struct tfm_cugraph *cugraph;
    int8_t cugraph_ok;
};

/* exec_plan.c: the plan that computes outs (and, with effects, every
 * assign and print); use_inputs = 0: a placeholder among them is an
 * error. */
tfm_plan *tfm_exec_plan_build(tfm_graph *g, const tfm_ref *outs, int nout,
                              int effects, int use_inputs);

/* exec.c: whether op's kernel may be given input 0 as its output
 * (Note [Writing over a loop variable]). */
int tfm_exec_writes_over_input(tfm_op op);

/* exec.c: outputs made as views instead of copies since the process
 * began (Note [Views of live inputs]); read through ctypes by tests. */
int64_t tfm_exec_view_count(void);

/* exec_arena.c (Note [Arena budget]) */
void tfm_exec_arena_drop(tfm_plan *p);
tfm_buffer *tfm_exec_arena_take(const tfm_plan *p, int recorded,
                                tfm_code *rc);
void tfm_exec_arena_give(const tfm_plan *p, tfm_buffer *arena);

#endif

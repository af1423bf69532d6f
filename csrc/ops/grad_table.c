/* The gradient tables, expanded from grads.def, and the checks that
 * keep that list and the op table in step. */
#include "op.h"

#include "grads.h"

const tfm_grad_fn tfm_op_grads[TFM_OP_COUNT] = {
#define G(ENUM, RULE, SAVED_IN, SAVED_OUT) [TFM_OP_##ENUM] = RULE,
#include "grads.def"
#undef G
};

/* See Note [Saved tensors] in grads.h. */
const tfm_grad_saves tfm_op_grad_saves[TFM_OP_COUNT] = {
#define G(ENUM, RULE, SAVED_IN, SAVED_OUT)                                \
    [TFM_OP_##ENUM] = { (SAVED_IN) != TFM_SAVES_ALL,                      \
                        (unsigned char)(SAVED_IN),                        \
                        (unsigned char)(SAVED_OUT) },
#include "grads.def"
#undef G
};

/* ---- compile-time checks ----
 * Each op needs exactly one of: a G line, the NONDIFF flag (never a
 * gradient), the GRAPH_ONLY flag (never on a tape). Designated
 * initializers would take a forgotten line as "no gradient" and a
 * repeated one silently, so the build checks instead:
 *  - a G line for a missing op does not compile (no TFM_OP_ENUM);
 *  - a repeated G line redefines the enumerator tfm_grad_line_ENUM;
 *  - a G line for a NONDIFF or GRAPH_ONLY op fails its _Static_assert;
 *  - then the G lines and the flagged rows must add up to TFM_OP_COUNT,
 *    so an op that is in neither fails the count. */
enum {
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS)                    \
    tfm_grad_flags_##ENUM = (FLAGS),
#include "ops.def"
#undef X
};

enum {
#define G(ENUM, RULE, SAVED_IN, SAVED_OUT) tfm_grad_line_##ENUM,
#include "grads.def"
#undef G
    TFM_GRAD_LINES
};

#define G(ENUM, RULE, SAVED_IN, SAVED_OUT)                                \
    _Static_assert(!(tfm_grad_flags_##ENUM &                              \
                     (TFM_OPF_NONDIFF | TFM_OPF_GRAPH_ONLY)),             \
                   #ENUM " is NONDIFF or GRAPH_ONLY: it takes no G line in " \
                   "grads.def");                                          \
    _Static_assert(((SAVED_IN) == TFM_SAVES_ALL) ==                       \
                   ((SAVED_OUT) == TFM_SAVES_ALL) &&                      \
                   ((SAVED_IN) == TFM_SAVES_ALL ||                        \
                    ((SAVED_IN) >= 0 && (SAVED_IN) <= 0xff &&             \
                     (SAVED_OUT) >= 0 && (SAVED_OUT) <= 0xff)),           \
                   #ENUM ": saved masks are 8-bit, or TFM_SAVES_ALL in "  \
                   "both");
#include "grads.def"
#undef G

enum {
    TFM_GRAD_EXEMPT = 0
#define X(ENUM, NAME, NIN, NOUT, INFER, KERNEL, FLAGS)                    \
    + (((FLAGS) & (TFM_OPF_NONDIFF | TFM_OPF_GRAPH_ONLY)) != 0)
#include "ops.def"
#undef X
};

_Static_assert(TFM_GRAD_LINES + TFM_GRAD_EXEMPT == TFM_OP_COUNT,
               "an op has neither a G line in ops/grads.def nor the "
               "NONDIFF or GRAPH_ONLY flag on its row");

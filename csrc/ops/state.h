/* The state family (rows in ops_state.def): graph-only ops run by the
 * executor itself, and the text formatting behind tf.print. */
#ifndef TFM_OPS_STATE_H
#define TFM_OPS_STATE_H

#include "op.h"

/* Placeholder, Const, ReadVariableOp: one output whose dtype is a.dtype
 * and whose shape is a.ints[0..n_ints) (-1 = unknown dim). */
tfm_code tfm_infer_from_attrs(tfm_op op, const tfm_meta *in, int nin,
                              const tfm_attrs *a, tfm_meta *out, int *nout);
/* Assign*VariableOp, PrintV2: any inputs, no outputs. */
tfm_code tfm_infer_sink(tfm_op op, const tfm_meta *in, int nin,
                        const tfm_attrs *a, tfm_meta *out, int *nout);

/* If, While: outputs come from sub-graphs, not from input metas. */
tfm_code tfm_infer_control(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);

/* A tensor's text as tf.print shows it (TF's PrintV2 format):
 * `[0 1 2 ... 7 8 9]`, nested brackets per dim, `summarize` elements at
 * each end of every dim (-1: all). Floats print in their shortest exact
 * form, bools as 1/0. Returns a malloc'd string, or NULL with the error
 * set. */
char *tfm_format_tensor(const tfm_tensor *t, int summarize);

/* Where printed text goes: the binding sends it to Python's sys.stdout /
 * sys.stderr (stream 1 / 2) or to a stream it registered (3 and up).
 * Without a hook, 1 and 2 are C's stdout and stderr. The hook returns
 * nonzero with the error set on failure. */
typedef int (*tfm_print_fn)(const char *text, int stream);
void tfm_print_set_hook(tfm_print_fn fn);
tfm_code tfm_print_write(const char *text, int stream);

/* texts[0] t[0] texts[1] ... t[n-1] texts[n], tensors formatted as by
 * tfm_format_tensor: a malloc'd string, or NULL with the error set. */
char *tfm_format_line(const char *const *texts, tfm_tensor *const *t,
                      int n, int summarize);

/* tf.print's whole line (tfm_format_line), written to stream. */
tfm_code tfm_print_tensors(const char *const *texts, tfm_tensor *const *t,
                           int n, int stream, int summarize);

/* EagerPyFunc (ops_state.def): outputs from the attrs, and a kernel that
 * hands the inputs to the hook and checks nothing itself: the hook fills
 * out[0..nout) (allocated, of the traced dtypes and shapes) or returns
 * nonzero with the error set; a NULL out[k] (an output with a -1 dim)
 * means the hook hands back the function's own tensor (Note [py_function
 * outputs of unknown shape] in graph/exec.c). Without a hook the kernel
 * fails. */
tfm_code tfm_infer_py_func(tfm_op op, const tfm_meta *in, int nin,
                           const tfm_attrs *a, tfm_meta *out, int *nout);
tfm_code tfm_k_py_func(tfm_op op, tfm_tensor *const *in, int nin,
                       const tfm_attrs *a, tfm_tensor *const *out, int nout,
                       const tfm_kctx *ctx);
typedef int (*tfm_py_func_fn)(int64_t token, tfm_tensor *const *in, int nin,
                              tfm_tensor *const *out, int nout);
void tfm_py_func_set_hook(tfm_py_func_fn fn);

#endif

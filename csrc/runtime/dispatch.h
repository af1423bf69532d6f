/* Calling an op: the one entry point for eager execution, tracing and
 * tape recording (see DESIGN.md, "How a call flows"). */
#ifndef TFM_DISPATCH_H
#define TFM_DISPATCH_H

#include "../ops/op.h"

/* Run (or trace) op on inputs. Fills out[0..*nout) with new references;
 * out needs room for TFM_MAX_OUTPUTS unless the op has a fixed count.
 * Records on every active tape that watches an input. */
tfm_code tfm_call(tfm_op op, tfm_tensor *const *in, int nin,
                  const tfm_attrs *a, tfm_tensor **out, int *nout);

/* Single-output convenience: new reference, or NULL on error. `a` may be
 * NULL for ops without attributes. */
tfm_tensor *tfm_call1(tfm_op op, tfm_tensor *const *in, int nin,
                      const tfm_attrs *a);

/* Shape/dtype inference only (also used by the graph builder). */
tfm_code tfm_infer(tfm_op op, tfm_tensor *const *in, int nin,
                   const tfm_attrs *a, tfm_meta *out, int *nout);

/* Whether op's kernel on device takes dtype d itself. Only the 16-bit
 * floats can say no: for them the dispatcher (and the graph executor)
 * computes in float32 and rounds the results back. */
int tfm_kernel_takes(tfm_op op, tfm_dtype d, int device);

/* Run the kernel of op on concrete inputs into freshly allocated outputs,
 * with no tracing and no recording: what the graph executor calls. */
tfm_code tfm_run_kernel(tfm_op op, tfm_tensor *const *in, int nin,
                        const tfm_attrs *a, tfm_tensor **out, int *nout);

/* tfm_run_kernel on device (-1: the tf.device scope's, else where the
 * inputs are), with TF's soft placement: a device without a kernel for
 * op runs it on the CPU. Inputs elsewhere are copied over. */
tfm_code tfm_run_kernel_on(tfm_op op, int device, tfm_tensor *const *in,
                           int nin, const tfm_attrs *a, tfm_tensor **out,
                           int *nout);

/* Run op into outputs the caller allocated with the metas inference
 * gave (the executor's memory plan, a variable's buffer), on the
 * outputs' device, releasing the caller's lock for big work as
 * tfm_run_kernel does. Inputs elsewhere are copied there; a device
 * with no kernel for op computes on the CPU and copies the results in.
 * No inference: the caller vouches for dtypes and shapes. */
tfm_code tfm_run_kernel_into(tfm_op op, tfm_tensor *const *in, int nin,
                             const tfm_attrs *a, tfm_tensor *const *out,
                             int nout);

/* The binding releases its interpreter lock around big kernels through
 * these hooks; the core knows nothing of Python. unlock returns a token
 * that relock takes back. */
typedef void *(*tfm_unlock_fn)(void);
typedef void (*tfm_relock_fn)(void *token);
void tfm_set_lock_hooks(tfm_unlock_fn unlock, tfm_relock_fn relock);
/* fn(ctx), without the caller's lock when work (elements touched) is
 * big enough to be worth it, as tfm_run_kernel does for kernels: for
 * other code that only computes (graph/fused.c). fn must not touch
 * refcounts. */
tfm_code tfm_run_unlocked(tfm_code (*fn)(void *), void *ctx, int64_t work);

/* The kernel of op on device (an index of core/device.h's table), or
 * NULL when the device has none. */
tfm_kernel_fn tfm_kernel_for(tfm_op op, int device);
/* Where op runs when asked for device: there if it has a kernel, else
 * on the CPU (TF's soft placement). */
int tfm_place_op(tfm_op op, int device);

/* tf.debugging.set_log_device_placement: when set, every op run says
 * where, in TF's words ("Executing op AddV2 in device /job:localhost/
 * replica:0/task:0/device:CPU:0"), on stderr. */
extern int tfm_log_placement;
void tfm_log_device_placement(tfm_op op, int device);

/* Where an op goes with no tf.device scope and every input on the CPU:
 * -1 (or 0) the CPU; a GPU's index once the binding finds one, which is
 * TF's rule (an op with a kernel there runs there). Traced graphs follow
 * it too (graph/pass_place.c). */
extern int tfm_default_device;

/* Device scope (tf.device): -1 = none, else a device table index. */
int tfm_device_scope(void);
void tfm_device_set_scope(int device);

#endif

/* Gradient tapes (see DESIGN.md, "Tape"). The dispatcher calls
 * tfm_tape_record after every op while any tape is active.
 *
 * Note [Tape lifetime]: a tape keeps, per recorded op, its inputs,
 * outputs and attributes (the tensors by reference, so their buffers stay
 * alive) until the record is released: progressively during a consuming
 * gradient() (non-persistent tapes), on reset(), or when the tape is
 * freed. A tape is watched by id (see Note [Variable ids] in variable.h):
 * it knows the ids of the tensors it watches and of the outputs of the ops
 * it recorded, and records an op when a floating-point input has one of
 * those ids. Tapes never read tensor data: under tracing every tensor they
 * see is symbolic.
 *
 * Active tapes form one stack per thread (Note [Tapes and threads] in
 * tape.c), guarded by the caller's lock (the GIL in the binding), like
 * tensor refcounts. */
#ifndef TFM_TAPE_H
#define TFM_TAPE_H

#include "../ops/op.h"

/* Number of tapes recording on this thread (above its topmost pause
 * barrier); the dispatcher's and the variables' fast check. It may be
 * too high, never too low: after another thread took one of this
 * thread's tapes off, it is recounted at the next record. */
extern _Thread_local int tfm_tape_active_count;
/* The exact count (recounts first). */
int tfm_tape_active(void);

/* Record op on each active tape that watches one of its inputs. */
tfm_code tfm_tape_record(tfm_op op, tfm_tensor *const *in, int nin,
                         const tfm_attrs *a, tfm_tensor *const *out,
                         int nout);

struct tfm_variable;
/* A variable was read: tapes that watch accessed variables watch it. */
void tfm_tape_variable_accessed(struct tfm_variable *v);

typedef struct tfm_tape tfm_tape;

enum tfm_tape_flags {
    TFM_TAPE_PERSISTENT = 1 << 0,
    TFM_TAPE_WATCH_ACCESSED = 1 << 1,  /* watch trainable variables read */
    TFM_TAPE_VARIABLES_ONLY = 1 << 2,  /* note variable reads, record no op
                                          (tf.custom_gradient's watcher) */
};

tfm_tape *tfm_tape_new(unsigned flags);
/* Stops recording if needed and releases everything the tape holds. */
void tfm_tape_free(tfm_tape *tape);

/* Start / stop recording (push on this thread's active stack / remove
 * from the stack it is on, which may be another thread's). push on a
 * recording tape, or pop on one that is not, is a ValueError. */
tfm_code tfm_tape_push(tfm_tape *tape);
tfm_code tfm_tape_pop(tfm_tape *tape);
int tfm_tape_is_recording(const tfm_tape *tape);
unsigned tfm_tape_flags(const tfm_tape *tape);

/* Watch a tensor (by id) or a variable (also listed by
 * tfm_tape_variables). Integer tensors are accepted but never recorded
 * through, so their gradient is None. */
tfm_code tfm_tape_watch(tfm_tape *tape, const tfm_tensor *t);
tfm_code tfm_tape_watch_variable(tfm_tape *tape, struct tfm_variable *v);

/* The variables this tape watches, in creation order. Borrowed; valid
 * until the tape changes. */
int tfm_tape_variables(tfm_tape *tape, struct tfm_variable *const **out);

/* Forget every record and watch (tf.GradientTape.reset). */
void tfm_tape_clear(tfm_tape *tape);

/* Tensors of at least n elements whose values no rule reads are kept
 * shape-only (Note [Saved tensors] in ops/grads.h); tests set 0. */
void tfm_tape_set_stub_min(int64_t n);

/* Number of op records held (for memory tests). */
int64_t tfm_tape_record_count(const tfm_tape *tape);

/* d(sum of targets)/d(source) for each source, into result[0..nsources)
 * as new references, NULL where unconnected (or zeros of the source's
 * shape when zeros_for_unconnected). out_grads may be NULL, or hold NULL
 * for targets seeded with ones. Sources with a non-float dtype get NULL.
 * With consume, each record is released as soon as it has been used and
 * the tape is left empty (non-persistent tapes). Gradient ops run through
 * tfm_call, so active tapes (this one too, when it is recording) record
 * them: higher-order gradients. */
tfm_code tfm_tape_gradient(tfm_tape *tape, tfm_tensor *const *targets,
                           int ntargets, tfm_tensor *const *out_grads,
                           tfm_tensor *const *sources, int nsources,
                           int zeros_for_unconnected, int consume,
                           tfm_tensor **result);

/* Note [Gradient ready hook]: data-parallel training wants each source's
 * gradient as soon as it is complete, to start its all-reduce while the
 * backward pass goes on (tfmini/distribute/overlap.py). A source's
 * gradient is complete once the walk has passed the earliest recorded op
 * that reads it: no op before that one can add to it. This form of
 * tfm_tape_gradient calls ready(arg, j, grad) (grad borrowed, alive until
 * the call returns) for each source j whose gradient is complete before
 * the walk ends, in the order they complete; sources never read by a
 * recorded op are not reported (the caller has them in result). A
 * nonzero return from ready stops the walk with that code. NULL ready is
 * tfm_tape_gradient, at no extra cost. */
typedef tfm_code (*tfm_grad_ready_fn)(void *arg, int source,
                                      tfm_tensor *grad);
tfm_code tfm_tape_gradient_hooked(tfm_tape *tape,
                                  tfm_tensor *const *targets, int ntargets,
                                  tfm_tensor *const *out_grads,
                                  tfm_tensor *const *sources, int nsources,
                                  int zeros_for_unconnected, int consume,
                                  tfm_tensor **result,
                                  tfm_grad_ready_fn ready, void *arg);

/* ---- custom gradients (tf.custom_gradient) ----
 * A record whose gradient is a function of the binding's. Each record
 * holds one reference to ctx (retain on record, release on free), so a
 * collector can visit ctx once per record (tfm_tape_visit). */
typedef struct tfm_tape_fn {
    /* grad_out[k] may be NULL (no gradient for output k); fill grad_in
     * with new references or NULL. */
    tfm_code (*grad)(void *ctx, tfm_tensor *const *in, int nin,
                     tfm_tensor *const *out, int nout,
                     tfm_tensor *const *grad_out, tfm_tensor **grad_in);
    void (*retain)(void *ctx);
    void (*release)(void *ctx);
} tfm_tape_fn;

/* Record a custom op on each active tape that watches an input. */
tfm_code tfm_tape_record_custom(const tfm_tape_fn *fn, void *ctx,
                                tfm_tensor *const *in, int nin,
                                tfm_tensor *const *out, int nout);
/* Whether some active tape would record an op on these inputs. */
int tfm_tape_should_record(tfm_tensor *const *in, int nin);

/* Call visit(ctx, arg) for each custom record's ctx; stops at and
 * returns the first nonzero result. */
int tfm_tape_visit(tfm_tape *tape, int (*visit)(void *ctx, void *arg),
                   void *arg);
/* Release every custom record (the collector breaking a cycle). */
void tfm_tape_clear_custom(tfm_tape *tape);

/* Stop every tape of this thread (tracing, tf.custom_gradient's forward
 * pass): pushes a barrier on the thread's active stack; tapes pushed
 * above it record as usual.
 * tfm_tape_resume_all removes the topmost barrier. */
tfm_code tfm_tape_pause_all(void);
void tfm_tape_resume_all(void);

#endif

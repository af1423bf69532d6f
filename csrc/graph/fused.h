/* Fused nodes (see Note [Fused programs]): the expression program that
 * graph/pass_fuse.c and graph/pass_epilogue.c compile into a
 * _FusedElementwise or _FusedMatMul node, and its evaluator, which the
 * executor (exec.c) calls for those nodes.
 *
 * Note [Fused programs]: a fused node stands for a tree of elementwise
 * ops whose intermediate values nobody else reads, except those it also
 * outputs (instruction field `out`). Its program lists
 * those ops in the order they ran when traced; an operand is a register
 * (the value of an earlier instruction), one of the node's inputs, or,
 * in a _FusedMatMul, the matmul's result (TFM_FUSED_BASE). Every
 * intermediate has the output's shape (pass_fuse.c only fuses a node into
 * a consumer of the same shape), so the evaluator can walk the output in
 * blocks of a few thousand elements and run the whole program on each
 * block while it sits in cache: registers are block-sized scratch, full
 * inputs are viewed in place, scalars stay scalars, other broadcast
 * inputs (a bias [C] against [N, C]) are gathered into scratch. Each
 * instruction calls the op's own CPU kernel (tfm_ops[op].cpu) on
 * stack-built tensor views, so a fused node computes the same numbers as
 * the ops it replaced, element for element; only the transcendental
 * functions may differ in the last bits, where libm's vector and scalar
 * variants (chosen by loop length) disagree.
 *
 * The program holds no pointers (graph.h's tfm_node.prog is copied with
 * memcpy), and the first instruction that produces a value is its only
 * writer: registers are reused only once their value is dead, and an
 * instruction never writes a register it reads. */
#ifndef TFM_GRAPH_FUSED_H
#define TFM_GRAPH_FUSED_H

#include <stdatomic.h>

#include "../runtime/graph_impl.h"

#define TFM_FUSED_MAX_INSTR 48
/* Node inputs the program may read (besides a matmul's two). */
#define TFM_FUSED_MAX_IN 32
/* Values of a group also read after it (outputs besides the root's). */
#define TFM_FUSED_MAX_OUT 8

/* Operands: >= 0 a register; TFM_FUSED_BASE the matmul's result;
 * TFM_FUSED_INPUT(k) the program's input k (node input first_input+k). */
#define TFM_FUSED_BASE (-1)
#define TFM_FUSED_INPUT(k) (-2 - (k))
#define TFM_FUSED_INPUT_INDEX(v) (-2 - (v))

typedef struct tfm_fused_instr {
    int16_t op;        /* tfm_op: an elementwise op with a CPU kernel */
    int8_t nin;        /* 1 or 2 */
    int8_t dtype;      /* output dtype */
    int16_t src[2];    /* operands (see above) */
    int16_t dst;       /* register written */
    int16_t out;       /* > 0: also node output `out` (its value is
                        * read after the fused node too) */
    int32_t adtype;    /* the op's attrs that elementwise ops read: */
    int64_t ai;        /* a.i[0] (Gelu's approximate) */
    double af;         /* a.f[0] (LeakyRelu's alpha) */
} tfm_fused_instr;

typedef struct tfm_fused_prog {
    int32_t ninstr;
    int32_t nreg;          /* block-sized scratch registers */
    int32_t nin;           /* program inputs */
    int32_t first_input;   /* 0, or 2 for _FusedMatMul (a, b) */
    int32_t nout;          /* node outputs: the last instruction's, then
                            * those of instructions with out > 0 */
    tfm_fused_instr code[TFM_FUSED_MAX_INSTR];
} tfm_fused_prog;

/* ---- building (the passes) ---- */

/* Whether node n may become an instruction: an elementwise op with a
 * CPU kernel, one output, float32/float64 in and out, a known shape. */
int tfm_fused_can_fuse(const tfm_graph *g, const tfm_node *n);

/* uses[k]: how many times output 0 of node k is read: by node inputs,
 * graph outputs and control edges (which pin the node); consumer[k]: the
 * last node reading it. Arrays of tfm_graph_node_count(g) entries. */
void tfm_fused_uses(const tfm_graph *g, int32_t *uses, int32_t *consumer);

/* What every fusion pass opens with (pass_fuse, fuse_updates and the
 * epilogue passes): uses[] and consumer[] as tfm_fused_uses fills them,
 * and role[] (-1 for every node) for the pass's own matching; n + 1
 * entries each, in one block. */
typedef struct tfm_fuse_scratch {
    int32_t n;
    int32_t *uses;
    int32_t *consumer;
    int32_t *role;
} tfm_fuse_scratch;
/* TFM_OK, or the OOM error set and nothing left to free. */
tfm_code tfm_fuse_scratch_init(tfm_fuse_scratch *s, const tfm_graph *g);
void tfm_fuse_scratch_free(tfm_fuse_scratch *s);
/* Sets the error a fusion pass reports when its scratch is short. */
tfm_code tfm_fuse_oom(void);

/* How the match-then-emit passes (pool_grad, conv_epilogue, epilogue)
 * end: when nothing matched, g itself with a new reference; else a
 * rewrite of g that copies every node whose role is -1 and hands each
 * other node to emit, which adds the fused node in its place or drops
 * it (its outputs are then mapped by the node that replaces it). A new
 * reference, or NULL with the error set. */
struct tfm_rw;
typedef tfm_code (*tfm_fuse_emit_fn)(struct tfm_rw *rw, int32_t k,
                                     int32_t role, void *ctx);
tfm_graph *tfm_fuse_rewrite(tfm_graph *g, const int32_t *role, int matched,
                            tfm_fuse_emit_fn emit, void *ctx);

void tfm_fused_init(tfm_fused_prog *p, int first_input);
/* Append node n's op with operands src[0..n->nin): operands >= 0 here
 * name earlier instructions (by index), not registers. Returns the
 * instruction's index, or -1 when the program is full. */
int tfm_fused_emit(tfm_fused_prog *p, const tfm_node *n,
                   const int16_t *src);
/* Assign registers; the last instruction is the output. */
void tfm_fused_finish(tfm_fused_prog *p);
/* Store p as node d's program (in g's arena). */
tfm_code tfm_fused_attach(tfm_graph *g, int d, const tfm_fused_prog *p);

/* How an input of a fused node is read against its output shape:
 * every element (same size), one scalar, periodic (its shape is the
 * output's trailing dims, possibly after leading 1s, such as a bias [C]
 * against [N, C]: element i reads element i % period), or some other
 * broadcast. */
enum { TFM_FUSED_IN_FULL, TFM_FUSED_IN_SCALAR, TFM_FUSED_IN_PERIODIC,
       TFM_FUSED_IN_OTHER };
int tfm_fused_input_kind(const tfm_shape *out, const tfm_shape *in,
                         int64_t *period);

/* ---- native code (fused_native.c, native_cache.c) ----
 *
 * Note [Native fused programs]: the block evaluator below calls one
 * kernel per instruction per block, so every intermediate still makes a
 * round trip through (cache) memory, and an 8-op chain costs about
 * twice a single pass. For big nodes the executor instead asks
 * fused_native.c for the program as machine code: it writes the program
 * as one C loop over the output (each instruction a local variable, so
 * intermediates stay in vector registers; each op's formula is the row
 * its CPU kernel expands too, Note [Elementwise formulas] in
 * kernels/ew_formulas.h, with the same libmvec declarations and FMA
 * contraction off, so exact ops give the same bits as unfused), compiles
 * it with the system C compiler ($TFMINI_CC, one program without
 * arguments; default cc) into a shared object, and loads it. This is
 * what TorchInductor does for CPUs.
 *
 * When: on a step's first unrecorded run, never when a plan is built,
 * so tracing a function or loading a saved model runs no compiler; and
 * only for nodes of at least TFM_NATIVE_MIN_ELEMENTS elements. Compiled
 * programs are cached in this process and on disk (native_cache.c: Note
 * [Native code cache], which also says how the directory is checked and
 * bounded), keyed by a hash of the source, compiler, flags and CPU.
 * Without a compiler, when compiling fails (see <key>.<pid>.log), when
 * the cache directory or a cached file is refused, for an op with no
 * formula, with $TFMINI_NATIVE=0 or with the "native" optimizer option
 * off, the node keeps the block evaluator. The same writer
 * (tfm_fused_source) gives a GPU its kernels: Note [Fused programs on
 * the GPU] in fused_nvrtc.c. */

/* How program input k is read (tfm_fused_input_kind) and its dtype. */
typedef struct tfm_fused_src_in {
    int kind;
    tfm_dtype dtype;
    int64_t period;
} tfm_fused_src_in;

/* The source text of program p, written from the formula rows with one
 * statement per instruction, the same for both targets:
 * TFM_FUSED_SRC_C, the C function `tfm_native` (tfm_fused_native_fn
 * below); TFM_FUSED_SRC_CUDA, the grid-stride CUDA kernel `tfm_fused`
 * that fused_nvrtc.c compiles with NVRTC. period: that of
 * every periodic input (they must share it). NULL (no error set) when
 * an op has no formula, a dtype is not float32/float64 or an input is
 * some other broadcast. The caller frees it. */
enum { TFM_FUSED_SRC_C, TFM_FUSED_SRC_CUDA };
char *tfm_fused_source(const tfm_fused_prog *p, int out_dtype,
                       const tfm_fused_src_in *ins, int64_t period,
                       int target);

/* Elements [start, start + len) of a node's outputs: in[k] is program
 * input k's data, out[k] node output k's. */
typedef void (*tfm_fused_native_fn)(const void *const *in, void *const *out,
                                    int64_t start, int64_t len);

/* Nodes smaller than this keep the block evaluator. Measured: a 6-op
 * chain over 65,536 float32 on one thread took 159 us a call in the
 * block evaluator and 75 us compiled (about 0.2 ns per element and
 * instruction saved), and a compile costs about 0.1 to 0.3 s once per
 * machine (the disk cache keeps it): a node of this size earns it back
 * after a few thousand calls, smaller ones after proportionally more. */
#define TFM_NATIVE_MIN_ELEMENTS 65536

/* Node nd's program compiled for its static shapes, or NULL (no error
 * set) when it is small, not expressible, native code is off, or no
 * compiler works. Runs the compiler unless the program is cached. */
tfm_fused_native_fn tfm_fused_native(const tfm_graph *g, const tfm_node *nd);

/* Whether nd is big enough for native code (cheap: no compiler). */
int tfm_fused_native_wanted(const tfm_node *nd);

/* A plan step's program, compiled on its first run. A zeroed struct is
 * TFM_NATIVE_NO; a plan sets TFM_NATIVE_WANTED when it is built. */
enum { TFM_NATIVE_NO, TFM_NATIVE_WANTED, TFM_NATIVE_DONE };
typedef struct tfm_native_lazy {
    _Atomic int state;
    tfm_fused_native_fn fn;      /* valid once state is DONE */
} tfm_native_lazy;

/* l's program: compiled by the first caller (others wait for it), NULL
 * when not wanted or it failed. Thread-safe. */
tfm_fused_native_fn tfm_native_lazy_get(tfm_native_lazy *l,
                                        const tfm_graph *g,
                                        const tfm_node *nd);

/* What a device's kernel for _FusedElementwise is given as its attrs
 * (the table's signature has no room for a program): the node's attrs
 * first, so it is also a tfm_attrs, then its program. Such a kernel
 * returns TFM_ERR_UNIMPLEMENTED for a program it does not take, and the
 * executor then runs the program op by op (exec_device.c). */
typedef struct tfm_fused_attrs {
    tfm_attrs a;
    const tfm_fused_prog *prog;
} tfm_fused_attrs;

/* ---- running (the executor) ---- */

/* Node n (_FusedElementwise or _FusedMatMul) on its inputs: out[0..
 * prog->nout) get new references. On entry each out[k] is NULL or the
 * output the executor's memory plan placed (a reference the call takes
 * over); for a single-output _FusedElementwise that may be the memory
 * of a full-shape input that dies here (in place). recorded = 1 (a
 * replay under a GradientTape), inputs off the CPU or an active
 * tf.device scope run the program op by op through the dispatcher
 * instead, whole tensors at a time. native: the program compiled
 * (tfm_fused_native), or NULL for the block evaluator. keep_lock: run
 * under the interpreter lock even when big (an output is a variable's
 * memory: exec_plan.c's Note [Fused writes into variables]). */
tfm_code tfm_fused_run(const tfm_node *n, tfm_tensor *const *in,
                       tfm_tensor **out, int recorded,
                       tfm_fused_native_fn native, int keep_lock);

/* A _FusedElementwise node's kernel on a GPU (fused_nvrtc.c, Note
 * [Fused programs on the GPU]); NULL in a build without CUDA. */
tfm_kernel_fn tfm_fused_gpu_kernel(void);
#ifdef TFMINI_WITH_CUDA
/* fused_nvrtc.c's counters and its test hook (tests, through ctypes). */
void tfm_cuda_fused_counts(long *compiled, long *hits, long *launched,
                           long *declined);
int tfm_cuda_fused_compile_check(int ninstr, const int64_t *code,
                                 const double *af, int nin,
                                 const int64_t *inputs, int out_dtype,
                                 const char *arch, char *text, size_t cap);
#endif

#endif

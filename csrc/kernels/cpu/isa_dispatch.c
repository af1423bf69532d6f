/* The run-time choice between the build's loops and their AVX-512 copy,
 * and the entry points that follow it (Note [ISA dispatch] in
 * isa_dispatch.h). */
#include "isa_dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ew_float.h"
#include "reduce_impl.h"

#ifdef TFM_ISA_DISPATCH

static int chosen = -1;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static int
cpu_has_v4(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f")
           && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512cd")
           && __builtin_cpu_supports("avx512dq")
           && __builtin_cpu_supports("avx512vl");
}

static void
choose(void)
{
    const char *want = getenv("TFMINI_ISA");
    int has = cpu_has_v4();
    int c = has;
    if (want && *want) {
        if (!strcmp(want, "avx2") || !strcmp(want, "base")) {
            c = 0;
        } else if (!strcmp(want, "avx512")) {
            /* Asked for on a CPU without it: running it would be SIGILL. */
            if (!has)
                fprintf(stderr, "tfmini: TFMINI_ISA=avx512 but this CPU "
                        "lacks AVX-512 (F, BW, CD, DQ, VL): running the "
                        "build's own loops\n");
        } else {
            fprintf(stderr, "tfmini: TFMINI_ISA=%s is not one of avx2, "
                    "avx512: ignored (choosing by the CPU)\n", want);
        }
    }
    __atomic_store_n(&chosen, c, __ATOMIC_RELEASE);
}

int
tfm_isa_avx512(void)
{
    int c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    if (__builtin_expect(c < 0, 0)) {
        pthread_once(&chosen_once, choose);
        c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
    }
    return c;
}

int
tfm_isa_dispatches(void)
{
    return 1;
}

/* ---- the entry points of the dispatched files ---- */

#define BOTH_(ret, name, params)                                            \
    ret name##_base params;                                                 \
    ret name##_avx512 params;

BOTH_(tfm_ew_binary_fn, tfm_ew_float_binary, (tfm_op op, tfm_dtype d))
BOTH_(int, tfm_ew_float_unary, (tfm_op op, const tfm_tensor *in,
                                tfm_tensor *out, const tfm_attrs *a))
BOTH_(bool, tfm_reducer_get, (tfm_red_kind k, tfm_dtype d, tfm_reducer *r))
BOTH_(tfm_code, tfm_red_complex, (tfm_red_kind k, bool mean,
                                  const tfm_red_plan *p, const tfm_tensor *x,
                                  tfm_tensor *y, int64_t count))

tfm_ew_binary_fn
tfm_ew_float_binary(tfm_op op, tfm_dtype d)
{
    return tfm_isa_avx512() ? tfm_ew_float_binary_avx512(op, d)
                            : tfm_ew_float_binary_base(op, d);
}

int
tfm_ew_float_unary(tfm_op op, const tfm_tensor *in, tfm_tensor *out,
                   const tfm_attrs *a)
{
    return tfm_isa_avx512() ? tfm_ew_float_unary_avx512(op, in, out, a)
                            : tfm_ew_float_unary_base(op, in, out, a);
}

bool
tfm_reducer_get(tfm_red_kind k, tfm_dtype d, tfm_reducer *r)
{
    return tfm_isa_avx512() ? tfm_reducer_get_avx512(k, d, r)
                            : tfm_reducer_get_base(k, d, r);
}

tfm_code
tfm_red_complex(tfm_red_kind k, bool mean, const tfm_red_plan *p,
                const tfm_tensor *x, tfm_tensor *y, int64_t count)
{
    return tfm_isa_avx512() ? tfm_red_complex_avx512(k, mean, p, x, y, count)
                            : tfm_red_complex_base(k, mean, p, x, y, count);
}

#else /* one copy: the build's own target decides */

int
tfm_isa_avx512(void)
{
#ifdef __AVX512F__
    return 1;
#else
    return 0;
#endif
}

int
tfm_isa_dispatches(void)
{
    return 0;
}

#endif

const char *
tfm_isa_name(void)
{
    if (tfm_isa_avx512())
        return "avx512";
#ifdef __AVX2__
    return "avx2";
#else
    return "x86-64";
#endif
}

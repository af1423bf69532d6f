/* Note [ISA dispatch]: a portable build (TFMINI_ARCH=x86-64-v3, or any
 * target without AVX-512) compiles tfmini's hot loop files twice: once
 * for the build's target, once more for x86-64-v4 (AVX-512) through a
 * small wrapper file (*_avx512.c) that sets `#pragma GCC target` and
 * includes the loop file. The loop file names its few entry points with
 * TFM_ISA_FN(name), so the two copies get the suffixes _base and
 * _avx512, and isa_dispatch.c defines the plain names, which pick a copy
 * by tfm_isa_avx512(): one predictable branch per call, no per-element
 * cost. The choice is made once per process: the CPU's AVX-512 F, BW, CD,
 * DQ and VL (what x86-64-v4 means), unless TFMINI_ISA=avx2 forces the
 * build's own code (for tests and measurements); TFMINI_ISA=avx512 on a
 * CPU without AVX-512 warns once and runs the build's code.
 *
 * A build whose target already has AVX-512 (the default -march=native on
 * such a CPU) or is not GCC on x86-64 has one copy and no dispatch:
 * TFM_ISA_DISPATCH stays undefined and TFM_ISA_FN(name) is name.
 *
 * Not here: oneDNN (GEMM, conv) picks its own code at run time; the
 * int8 GEMM's VNNI path (qgemm.c) is compiled with target attributes and
 * checks the CPU itself; fused native code (graph/fused_native.c) is
 * compiled on the running machine with -march=native; Eigen's code
 * (the Eigen GEMM fallback, LU, triangular solves) has the build's
 * target only. */
#ifndef TFM_KERNELS_CPU_ISA_DISPATCH_H
#define TFM_KERNELS_CPU_ISA_DISPATCH_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && !defined(__AVX512F__)
#define TFM_ISA_DISPATCH 1
#endif

#if defined(TFM_ISA_VARIANT_AVX512)
#define TFM_ISA_FN(name) name##_avx512
#elif defined(TFM_ISA_DISPATCH)
#define TFM_ISA_FN(name) name##_base
#else
#define TFM_ISA_FN(name) name
#endif

/* 1 when AVX-512 code runs in this process: the AVX-512 copies were
 * chosen, or (no dispatch) the build's own target has AVX-512. */
int tfm_isa_avx512(void);

/* What runs: "avx512" (the AVX-512 copies, or a build whose own target
 * has AVX-512), else the build's target: "avx2" or "x86-64". */
const char *tfm_isa_name(void);

/* 1 when the build holds two copies and tfm_isa_avx512 chooses. */
int tfm_isa_dispatches(void);

#endif

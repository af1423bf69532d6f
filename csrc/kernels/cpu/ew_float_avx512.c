/* ew_float.c again, for x86-64-v4 (AVX-512), in a build whose own target
 * lacks it (Note [ISA dispatch] in isa_dispatch.h). The pragma comes
 * first so that every function of the copy, the loops' OpenMP bodies and
 * the headers' inline helpers included, gets the target. */
#include "isa_dispatch.h"

#ifdef TFM_ISA_DISPATCH
#pragma GCC target("arch=x86-64-v4")
#define TFM_ISA_VARIANT_AVX512 1
#undef TFM_ISA_FN
#define TFM_ISA_FN(name) name##_avx512
#include "ew_float.c"
#endif

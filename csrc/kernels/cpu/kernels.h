/* Every CPU kernel family, for the op registry. */
#ifndef TFM_KERNELS_CPU_KERNELS_H
#define TFM_KERNELS_CPU_KERNELS_H

#include "elementwise.h"

#endif

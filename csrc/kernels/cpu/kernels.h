/* Every CPU kernel family, for the op registry. */
#ifndef TFM_KERNELS_CPU_KERNELS_H
#define TFM_KERNELS_CPU_KERNELS_H

#include "conv.h"
#include "elementwise.h"
#include "ew_complex.h"
#include "linalg.h"
#include "nn.h"
#include "norm.h"
#include "random.h"
#include "reduce.h"
#include "rnn_cell.h"
#include "shape.h"
#include "string_kernels.h"

#endif

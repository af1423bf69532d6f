/* Declarations of the gradient rules (ops/grad_*.c). */
#ifndef TFM_OPS_GRADS_H
#define TFM_OPS_GRADS_H

#include "op.h"

#endif

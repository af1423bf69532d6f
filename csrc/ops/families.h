/* Every family's shape rules, for the registry. */
#ifndef TFM_OPS_FAMILIES_H
#define TFM_OPS_FAMILIES_H

#include "complex.h"
#include "conv.h"
#include "elementwise.h"
#include "linalg.h"
#include "nn.h"
#include "quant.h"
#include "random.h"
#include "reduce.h"
#include "rnn.h"
#include "shape.h"
#include "state.h"
#include "string_ops.h"

#endif

/* Shape rules of the shape family (rows in ops_shape.def). */
#ifndef TFM_OPS_SHAPE_H
#define TFM_OPS_SHAPE_H

#include "op.h"

#endif

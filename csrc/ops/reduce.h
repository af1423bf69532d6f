/* Shape rules of the reduce family (rows in ops_reduce.def). */
#ifndef TFM_OPS_REDUCE_H
#define TFM_OPS_REDUCE_H

#include "op.h"

#endif

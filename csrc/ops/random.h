/* Shape rules of the random family (rows in ops_random.def). */
#ifndef TFM_OPS_RANDOM_H
#define TFM_OPS_RANDOM_H

#include "op.h"

#endif

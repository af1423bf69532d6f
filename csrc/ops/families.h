/* Every family's shape rules, for the registry. */
#ifndef TFM_OPS_FAMILIES_H
#define TFM_OPS_FAMILIES_H

#include "elementwise.h"

#endif

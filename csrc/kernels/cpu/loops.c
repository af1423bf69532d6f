#include "loops.h"

void
tfm_bcast_plan(const tfm_shape *a, const tfm_shape *b, const tfm_shape *out,
               tfm_bcast *p)
{
    p->n = tfm_shape_numel(out);
    int64_t na = tfm_shape_numel(a), nb = tfm_shape_numel(b);
    if (na == p->n && nb == p->n) {
        p->kind = TFM_BC_SAME;
        return;
    }
    if (na == 1 && nb == p->n) {
        p->kind = TFM_BC_A_SCALAR;
        return;
    }
    if (nb == 1 && na == p->n) {
        p->kind = TFM_BC_B_SCALAR;
        return;
    }
    p->kind = TFM_BC_GENERAL;
    int64_t sa[TFM_MAX_DIMS], sb[TFM_MAX_DIMS];
    tfm_shape_broadcast_strides(a, out, sa);
    tfm_shape_broadcast_strides(b, out, sb);
    /* Merge dim d into d-1 when both operands stay contiguous across the
     * boundary, and drop size-1 dims: fewer, longer rows. */
    int nd = 0;
    for (int d = 0; d < out->ndim; d++) {
        if (out->dims[d] == 1)
            continue;
        if (nd > 0 && sa[d] * out->dims[d] == p->sa[nd - 1] &&
            sb[d] * out->dims[d] == p->sb[nd - 1]) {
            p->dims[nd - 1] *= out->dims[d];
            p->sa[nd - 1] = sa[d];
            p->sb[nd - 1] = sb[d];
            continue;
        }
        p->dims[nd] = out->dims[d];
        p->sa[nd] = sa[d];
        p->sb[nd] = sb[d];
        nd++;
    }
    if (nd == 0) {
        p->dims[0] = 1;
        p->sa[0] = p->sb[0] = 0;
        nd = 1;
    }
    p->ndim = nd;
}

#include "slice_plan.h"

#include "shape.h"

typedef struct { char s[160]; } shape_text;

static const char *
stext(shape_text *t, const tfm_shape *s)
{
    return tfm_shape_str(s, t->s, sizeof t->s);
}

/* The sparse spec (entries that may be an ellipsis or a new axis)
 * becomes one dense entry per input dim, as in TF's
 * ValidateStridedSliceOp: an ellipsis stands for as many whole dims as
 * the other entries leave (an implicit one ends a spec without one);
 * begin/end are clamped to the dim in the direction of travel; a shrunk
 * entry takes one element and must be in range. */
tfm_code
tfm_strided_slice_plan(const char *name, const tfm_shape *in,
                       const tfm_attrs *a, tfm_slice_plan *p)
{
    if (a->n_ints % 3 != 0)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: begin, end and "
                         "strides must have the same length, got %d values "
                         "in all", name, a->n_ints);
    int n = a->n_ints / 3;
    const int64_t *beg = a->ints, *end = a->ints + n, *str = a->ints + 2 * n;
    int64_t bmask = a->i[0], emask = a->i[1], ellipsis = a->i[2],
            newax = a->i[3], shrink = a->i[4];
    if (ellipsis & (ellipsis - 1))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Multiple ellipses "
                         "in slice spec not allowed", name);
    /* Bits past the spec's entries mean nothing (as in TF): an ellipsis
     * there is no ellipsis, and the implicit one below covers the
     * trailing dims. */
    ellipsis &= ((int64_t)1 << n) - 1;
    /* Without an ellipsis, unmentioned trailing dims are kept whole. */
    int nspec = n;
    if (!ellipsis) {
        ellipsis = (int64_t)1 << n;
        nspec = n + 1;
    }
    int new_after = 0, seen_ellipsis = 0;
    for (int k = 0; k < nspec; k++) {
        if (seen_ellipsis && ((newax >> k) & 1) && !((ellipsis >> k) & 1))
            new_after++;
        if ((ellipsis >> k) & 1)
            seen_ellipsis = 1;
    }
    int r = in->ndim;
    p->ndim = r;
    p->out.ndim = 0;
    int full = 0;
    shape_text t1;
    for (int k = 0; k < nspec; k++) {
        if ((ellipsis >> k) & 1) {
            int next = r - (nspec - k) + 1 + new_after;
            if (next > r)
                next = r;
            for (; full < next; full++) {
                p->begin[full] = 0;
                p->stride[full] = 1;
                p->len[full] = in->dims[full];
                if (p->out.ndim >= TFM_MAX_DIMS)
                    goto too_many;
                p->out.dims[p->out.ndim++] = in->dims[full];
            }
            continue;
        }
        if ((newax >> k) & 1) {
            if (p->out.ndim >= TFM_MAX_DIMS)
                goto too_many;
            p->out.dims[p->out.ndim++] = 1;
            continue;
        }
        if (full >= r)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: Index out of "
                             "range using input dim %d; input of shape %s "
                             "has only %d dims", name, full,
                             stext(&t1, in), r);
        int64_t dim = in->dims[full], s = str[k];
        int64_t b = beg[k], e = end[k];
        int bm = (bmask >> k) & 1, em = (emask >> k) & 1;
        int sh = (shrink >> k) & 1;
        if (s == 0)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: strides[%d] "
                             "must be non-zero", name, k);
        int64_t len;
        if (sh) {
            if (s < 0)
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: only stride "
                                 "1 allowed on non-range indexing", name);
            int64_t fwd = b < 0 && dim >= 0 ? b + dim : b;
            if (dim >= 0 && (fwd < 0 || fwd >= dim))
                return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: slice index "
                                 "%lld of dimension %d out of bounds (input "
                                 "shape %s)", name, (long long)b, full,
                                 stext(&t1, in));
            p->begin[full] = fwd;
            p->stride[full] = 1;
            p->len[full] = 1;
            full++;
            continue;
        }
        if (dim < 0) {
            /* Unknown size (symbolic): so is the count. */
            len = -1;
            b = 0;
        } else {
            /* Clamp into the valid range of the direction of travel. */
            int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
            if (bm) {
                b = s > 0 ? lo : hi;
            } else {
                b = b < 0 ? b + dim : b;
                b = b < lo ? lo : b > hi ? hi : b;
            }
            if (em) {
                e = s > 0 ? hi : lo;
            } else {
                e = e < 0 ? e + dim : e;
                e = e < lo ? lo : e > hi ? hi : e;
            }
            int64_t span = e - b;
            if (span == 0 || (span < 0) != (s < 0))
                len = 0;
            else
                len = span / s + (span % s != 0);
        }
        p->begin[full] = b;
        p->stride[full] = s;
        p->len[full] = len;
        if (p->out.ndim >= TFM_MAX_DIMS)
            goto too_many;
        p->out.dims[p->out.ndim++] = len;
        full++;
    }
    return TFM_OK;
too_many:
    return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: the result would have "
                     "more than %d dims", name, TFM_MAX_DIMS);
}

int64_t
tfm_slice_plan_view(const tfm_slice_plan *p, const tfm_shape *s, int64_t *st)
{
    int64_t base = 0;
    tfm_row_strides(s, st);
    for (int d = 0; d < p->ndim; d++) {
        base += p->begin[d] * st[d];
        st[d] *= p->stride[d];
    }
    return base;
}

tfm_code
tfm_strided_slice_grad_attrs(const tfm_attrs *a, tfm_shape *shape,
                             tfm_attrs *slice)
{
    int64_t r = a->i[5];
    if (r < 0 || r > TFM_MAX_DIMS || r > a->n_ints)
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "StridedSliceGrad: input "
                         "rank i[5] = %lld is out of range", (long long)r);
    *shape = tfm_shape_make((int)r, a->ints);
    for (int d = 0; d < r; d++)
        if (shape->dims[d] < -1)
            return tfm_error(TFM_ERR_INVALID_ARGUMENT, "StridedSliceGrad: "
                             "negative input dim %lld",
                             (long long)shape->dims[d]);
    *slice = *a;
    slice->n_ints = a->n_ints - (int)r;
    for (int k = 0; k < slice->n_ints; k++)
        slice->ints[k] = a->ints[r + k];
    slice->i[5] = 0;
    return TFM_OK;
}


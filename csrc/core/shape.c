#include "shape.h"

#include <stdio.h>
#include <string.h>

int64_t
tfm_shape_numel(const tfm_shape *s)
{
    int64_t n = 1;
    int saturated = 0;
    for (int i = 0; i < s->ndim; i++) {
        if (s->dims[i] < 0)
            return -1;
        if (__builtin_mul_overflow(n, s->dims[i], &n))
            saturated = 1;
    }
    /* A zero dim makes the product 0 whatever came before it. */
    for (int i = 0; saturated && i < s->ndim; i++)
        if (s->dims[i] == 0)
            return 0;
    return saturated ? INT64_MAX : n;
}

bool
tfm_shape_equal(const tfm_shape *a, const tfm_shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

bool
tfm_shape_is_known(const tfm_shape *s)
{
    for (int i = 0; i < s->ndim; i++)
        if (s->dims[i] < 0)
            return false;
    return true;
}

tfm_shape
tfm_shape_make(int ndim, const int64_t *dims)
{
    tfm_shape s;
    memset(&s, 0, sizeof s);
    if (ndim < 0)
        ndim = 0;
    if (ndim > TFM_MAX_DIMS)
        ndim = TFM_MAX_DIMS;    /* callers check rank first; never overrun */
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        s.dims[i] = dims[i];
    return s;
}

char *
tfm_shape_str(const tfm_shape *s, char *buf, size_t n)
{
    size_t used = 0;
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (int i = 0; i < s->ndim && used < n; i++) {
        if (s->dims[i] < 0)
            used += (size_t)snprintf(buf + used, n - used, "%s?",
                                     i ? "," : "");
        else
            used += (size_t)snprintf(buf + used, n - used, "%s%lld",
                                     i ? "," : "", (long long)s->dims[i]);
    }
    if (used < n)
        snprintf(buf + used, n - used, "]");
    return buf;
}

tfm_code
tfm_shape_broadcast(const char *op, const tfm_shape *a, const tfm_shape *b,
                    tfm_shape *out)
{
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    tfm_shape r;
    r.ndim = nd;
    for (int i = 0; i < nd; i++) {
        int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db)
            r.dims[i] = da;
        else if (da == 1)
            r.dims[i] = db;
        else if (db == 1)
            r.dims[i] = da;
        else if (da < 0 || db < 0)  /* unknown vs known: trust the known */
            r.dims[i] = da < 0 ? db : da;
        else {
            char sa[128], sb[128];
            return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                             "Incompatible shapes for %s: %s vs %s", op,
                             tfm_shape_str(a, sa, sizeof sa),
                             tfm_shape_str(b, sb, sizeof sb));
        }
    }
    *out = r;
    return TFM_OK;
}

tfm_code
tfm_shape_axis(const char *op, int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 &&
                                         axis != -1))
        return tfm_error(TFM_ERR_INVALID_ARGUMENT,
                         "%s: axis %lld is out of range for a tensor of "
                         "rank %d (expected [-%d, %d))", op,
                         (long long)axis, rank, rank, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return TFM_OK;
}

void
tfm_shape_broadcast_strides(const tfm_shape *from, const tfm_shape *to,
                            int64_t *strides)
{
    int64_t st = 1;
    for (int i = to->ndim - 1; i >= 0; i--) {
        int j = from->ndim - to->ndim + i;
        if (j < 0 || from->dims[j] == 1) {
            strides[i] = 0;
            if (j >= 0)
                st *= 1;
        } else {
            strides[i] = st;
            st *= from->dims[j];
        }
    }
}

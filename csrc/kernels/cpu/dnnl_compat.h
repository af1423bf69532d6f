/* The few oneDNN C API calls whose form changed between 2.x (Debian's
 * libdnnl-dev, 2.6) and 3.x (the onednn-cpu-gomp wheel, 3.2), so that
 * conv_dnnl.c and gemm_dnnl.c build against either with one copy of
 * their logic. Include after <dnnl.h>.
 *
 * The one deep change: a 2.x memory descriptor is a plain struct passed
 * by address; a 3.x one is a handle that its holder destroys. tfm_md is
 * whichever the build has, TFM_MD(m) is what the API takes, and every
 * tfm_md a caller fills gets a tfm_md_free (a no-op on 2.x), so the
 * same code owns descriptors correctly on both. Operation descriptors
 * are gone in 3.x (a primitive descriptor is made in one call); those
 * calls stay with the code that makes them (conv_dnnl.c, gemm_dnnl.c). */
#ifndef TFM_KERNELS_CPU_DNNL_COMPAT_H
#define TFM_KERNELS_CPU_DNNL_COMPAT_H

#include <dnnl.h>
#include <stddef.h>

#if defined(TFM_DNNL_MAJOR) && TFM_DNNL_MAJOR != DNNL_VERSION_MAJOR
#error "the dnnl.h found first is not the oneDNN setup.py chose (a wheel's header in /usr/local/include shadows /usr/include?): set DNNL_ROOT to the wheel's prefix or remove the wheel"
#endif

#if DNNL_VERSION_MAJOR >= 3
#define TFM_DNNL3 1
typedef dnnl_memory_desc_t tfm_md;
typedef const_dnnl_memory_desc_t tfm_cmd;
#define TFM_MD(m) (m)
#else
#define TFM_DNNL3 0
typedef dnnl_memory_desc_t tfm_md;
typedef const dnnl_memory_desc_t *tfm_cmd;
#define TFM_MD(m) (&(m))
#endif

static inline dnnl_status_t
tfm_md_tag(tfm_md *md, int nd, const dnnl_dims_t dims, dnnl_data_type_t dt,
           dnnl_format_tag_t tag)
{
#if TFM_DNNL3
    return dnnl_memory_desc_create_with_tag(md, nd, dims, dt, tag);
#else
    return dnnl_memory_desc_init_by_tag(md, nd, dims, dt, tag);
#endif
}

static inline dnnl_status_t
tfm_md_strides(tfm_md *md, int nd, const dnnl_dims_t dims,
               dnnl_data_type_t dt, const dnnl_dims_t strides)
{
#if TFM_DNNL3
    return dnnl_memory_desc_create_with_strides(md, nd, dims, dt, strides);
#else
    return dnnl_memory_desc_init_by_strides(md, nd, dims, dt, strides);
#endif
}

/* A copy the caller owns of a descriptor a primitive descriptor owns
 * (dnnl_primitive_desc_query_md's answer dies with it). */
static inline dnnl_status_t
tfm_md_copy(tfm_md *to, tfm_cmd from)
{
#if TFM_DNNL3
    return dnnl_memory_desc_clone(to, from);
#else
    *to = *from;
    return dnnl_success;
#endif
}

static inline void
tfm_md_free(tfm_md *md)
{
#if TFM_DNNL3
    if (*md)
        dnnl_memory_desc_destroy(*md);
    *md = NULL;
#else
    (void)md;
#endif
}

/* Post-ops lost their scale argument (eltwise) and gained a zero point
 * and a data type (sum) in 3.x; tfmini uses neither. */
static inline dnnl_status_t
tfm_post_sum(dnnl_post_ops_t po, float scale)
{
#if TFM_DNNL3
    return dnnl_post_ops_append_sum(po, scale, 0, dnnl_data_type_undef);
#else
    return dnnl_post_ops_append_sum(po, scale);
#endif
}

static inline dnnl_status_t
tfm_post_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg, float alpha,
                 float beta)
{
#if TFM_DNNL3
    return dnnl_post_ops_append_eltwise(po, alg, alpha, beta);
#else
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
#endif
}

#endif

/* The CUDA backend as the rest of tfmini sees it: built with nvcc
 * (device.c, kernels.c, *.cu) or as stub.c. Plain C, no CUDA types. */
#ifndef TFM_KERNELS_CUDA_H
#define TFM_KERNELS_CUDA_H

#include <stdint.h>

#include "../../core/status.h"

/* 1 when this build has the CUDA backend (nvcc was found). */
int tfm_cuda_available(void);
/* Registers every visible GPU in the device table (GPU n at index
 * 1 + n) and returns how many; 0 (nothing registered) without a GPU or
 * without CUDA. Idempotent. */
int tfm_cuda_init(void);
/* GPUs registered by tfm_cuda_init. */
int tfm_cuda_device_count(void);
/* Why no GPU is there (the CUDA error, or "built without CUDA"). */
const char *tfm_cuda_why_none(void);
/* Bytes of GPU n held by tensors now, and the most since the last reset
 * (TF's get_memory_info); reserved: what its pool holds from the driver
 * (Note [GPU allocator]). */
tfm_code tfm_cuda_memory_info(int n, int64_t *current, int64_t *peak,
                              int64_t *reserved);
tfm_code tfm_cuda_reset_peak(int n);
/* TF32 tensor cores for float32 matmuls (TF's default: on). */
void tfm_cuda_set_tf32(int on);
int tfm_cuda_tf32(void);
/* 1 when kernels is the GPU's kernel table and its kernel for op takes
 * float16 / bfloat16 (dtype) itself, computing in float32 inside
 * (cuBLASLt matmuls, the elementwise rows); 0 otherwise, where the
 * dispatcher casts to float32 around the kernel. */
int tfm_cuda_takes_half(const void *kernels, int op, int dtype);

#endif

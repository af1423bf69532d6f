/* The executor's steps that cross devices (Note [Device seam] in
 * core/device.h): they read values on the host or move them between
 * devices, so exec.c's plan never touches another device's memory. */
#ifndef TFM_EXEC_DEVICE_H
#define TFM_EXEC_DEVICE_H

#include "../runtime/graph.h"

/* Element 0 of a concrete tensor on any device, read on the host (NaN,
 * with the error set, when the copy fails). */
double tfm_exec_scalar(tfm_tensor *t);
/* PrintV2 node n on in[]: formatted from host copies. */
tfm_code tfm_exec_print(const tfm_node *n, tfm_tensor *const *in);
/* The InvalidArgumentError of Assert node n, whose condition failed,
 * with its data (data[], nin - 1 of them) formatted from host copies. */
tfm_code tfm_exec_assert_failed(const tfm_node *n, tfm_tensor *const *data);
/* _Copy node n: x onto the node's device into *out. Recorded, as
 * tf.identity under the device's scope, which the tape sees. */
tfm_code tfm_exec_copy(const tfm_node *n, tfm_tensor *x, tfm_tensor **out,
                       int recorded);
/* A fused node placed off the CPU (inputs copied there first): the
 * device's kernel for the whole program where it has one that takes it
 * and the node is not recorded (a GPU's: fused_nvrtc.c),
 * else its ops one by one through the dispatcher's kernels. */
tfm_code tfm_exec_fused_on_device(const tfm_node *n, tfm_tensor *const *in,
                                  tfm_tensor **out, int recorded);

#endif

/* A test-only device: host memory behind the device interface (Note
 * [Device seam] in core/device.h), every op's CPU kernel registered for
 * it, and counters of the copies that cross to and from it. Off until a
 * test turns it on (tfmini._C._enable_fake_device()); then
 * tf.device('/device:FAKE:0') names it. It proves the seam: an op run
 * there gives the CPU's bits, and every byte that crosses goes through
 * its copy functions, which count. */
#ifndef TFM_DEVICE_FAKE_H
#define TFM_DEVICE_FAKE_H

#include "../ops/op.h"

/* Its table index: out of the way of CUDA's 1 + n. */
#define TFM_FAKE_DEVICE (TFM_MAX_DEVICES - 1)

/* Register (on = 1: with every CPU kernel, counters zeroed) or remove
 * it. Removing it while its buffers live is the caller's bug. */
tfm_code tfm_fake_device_enable(int on);

typedef struct tfm_fake_stats {
    int64_t to_host, from_host, device_to_device;   /* copies */
    int64_t bytes_to_host, bytes_from_host;
    int64_t live_buffers;
} tfm_fake_stats;
void tfm_fake_device_stats(tfm_fake_stats *out, int reset);

/* Take op's kernel off the device (the soft-placement tests). */
void tfm_fake_device_deny(tfm_op op);

#endif

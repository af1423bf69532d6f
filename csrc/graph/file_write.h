/* Writing a whole file atomically and safely (Note [Atomic file write]):
 * used by the saved-model writer and, through _C.write_file_atomic, by
 * the weights and checkpoint files written from Python. */
#ifndef TFM_GRAPH_FILE_WRITE_H
#define TFM_GRAPH_FILE_WRITE_H

#include <stddef.h>

#include "../core/status.h"

/* Note [Atomic file write]: a fixed temp name ("x.tmp") opened with
 * fopen lets anyone who can write to the folder plant a symlink there
 * and have the writer overwrite any file the user can write, and two
 * writers of one folder rename each other's half-written temp file.
 * So the bytes go to a temp file in the target's folder named
 * ".<name>.tfm-<12 random letters>.tmp", created with
 * O_CREAT|O_EXCL|O_NOFOLLOW (a name that exists, symlink or not, is
 * never opened: another random name is drawn) and mode 0666 less the
 * umask, as any new file; the file is fsynced, renamed over the target
 * (rename replaces a symlink at the target, it does not follow it) and
 * the folder is fsynced so the rename survives a crash. Readers see the
 * old file or the new one; of concurrent writers the last rename wins.
 * A writer killed mid-write leaves its temp file: each successful write
 * removes the temp files of this pattern in its folder whose last write
 * is older than TFM_STALE_TEMP_SECONDS (younger ones may belong to a
 * writer still running). */
#define TFM_STALE_TEMP_SECONDS 60

/* Write n bytes of data to path as above. `who` names the caller in
 * errors ("tf.saved_model.save"): NotFoundError for a missing folder,
 * ResourceExhaustedError for a full disk, InternalError otherwise. */
tfm_code tfm_file_write_atomic(const char *path, const void *data, size_t n,
                               const char *who);

/* Remove stale temp files of Note [Atomic file write] in folder dir
 * (NULL or "" for the current folder) whose last write is more than
 * max_age seconds old; returns how many were removed. */
int tfm_file_remove_stale_temps(const char *dir, double max_age);

#endif

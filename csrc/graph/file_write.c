/* Atomic, symlink-safe file writes (Note [Atomic file write] in
 * file_write.h). POSIX only, like the rest of the saver. */
#include "file_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMP_MARK ".tfm-"
#define TEMP_RAND 12
#define TEMP_END ".tmp"
/* Long names are cut in the temp name so it stays under NAME_MAX. */
#define TEMP_BASE_MAX 200

static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

static void
random_letters(char *out, int n)
{
    unsigned char r[TEMP_RAND];
    ssize_t got = getrandom(r, sizeof r, GRND_NONBLOCK);
    if (got != (ssize_t)sizeof r) {
        /* No entropy yet (early boot): still unique, less secret. */
        static unsigned counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^
                     (uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_sec ^
                     (uint64_t)(uintptr_t)&counter ^ ++counter;
        for (size_t i = 0; i < sizeof r; i++) {
            x ^= x >> 33;
            x *= 0xFF51AFD7ED558CCDull;
            r[i] = (unsigned char)(x >> 56);
        }
    }
    for (int i = 0; i < n; i++)
        out[i] = alphabet[r[i] % (sizeof alphabet - 1)];
}

static tfm_code
io_error(const char *who, const char *what, const char *path, int err)
{
    /* TF's errno mapping (tsl's ErrnoToCode), less the codes tfmini
     * does not have. */
    tfm_code code = err == ENOENT || err == ENOTDIR ? TFM_ERR_NOT_FOUND
                  : err == ENOSPC || err == EDQUOT
                    ? TFM_ERR_RESOURCE_EXHAUSTED
                  : err == EFBIG ? TFM_ERR_OUT_OF_RANGE
                  : TFM_ERR_INTERNAL;
    return tfm_error(code, "%s: cannot %s %s: %s", who, what, path,
                     strerror(err));
}

/* Is name a temp file of ours: "." ... ".tfm-" 12 letters ".tmp"? */
static int
is_temp_name(const char *name)
{
    size_t n = strlen(name), tail = strlen(TEMP_MARK) + TEMP_RAND +
                                    strlen(TEMP_END);
    if (name[0] != '.' || n < tail + 1)
        return 0;
    const char *t = name + n - tail;
    if (memcmp(t, TEMP_MARK, strlen(TEMP_MARK)) != 0 ||
        strcmp(t + strlen(TEMP_MARK) + TEMP_RAND, TEMP_END) != 0)
        return 0;
    for (int i = 0; i < TEMP_RAND; i++)
        if (!strchr(alphabet, t[strlen(TEMP_MARK) + i]) ||
            !t[strlen(TEMP_MARK) + i])
            return 0;
    return 1;
}

int
tfm_file_remove_stale_temps(const char *dir, double max_age)
{
    int fd = open(dir && dir[0] ? dir : ".",
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    int removed = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!is_temp_name(e->d_name) ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || difftime(now, st.st_mtime) <= max_age)
            continue;
        if (unlinkat(fd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

/* dir of path ("" for the current folder) and its last part. */
static char *
split_path(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    size_t dn = slash ? (size_t)(slash - path) + (slash == path) : 0;
    char *dir = malloc(dn + 1);
    if (dir) {
        memcpy(dir, path, dn);
        dir[dn] = '\0';
    }
    *base = slash ? slash + 1 : path;
    return dir;
}

static int
write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        size_t chunk = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

tfm_code
tfm_file_write_atomic(const char *path, const void *data, size_t n,
                      const char *who)
{
    const char *base;
    char *dir = split_path(path, &base);
    size_t bn = strlen(base), dn = dir ? strlen(dir) : 0;
    if (!bn) {
        free(dir);
        return tfm_error(TFM_ERR_INVALID_ARGUMENT, "%s: '%s' names a "
                         "folder, not a file", who, path);
    }
    if (bn > TEMP_BASE_MAX)
        bn = TEMP_BASE_MAX;
    size_t cap = dn + 2 + bn + strlen(TEMP_MARK) + TEMP_RAND +
                 strlen(TEMP_END) + 1;
    char *tmp = dir ? malloc(cap) : NULL;
    if (!tmp) {
        free(dir);
        return tfm_error(TFM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory",
                         who);
    }
    int fd = -1, err = 0;
    for (int tries = 0; tries < 100; tries++) {
        char letters[TEMP_RAND + 1];
        random_letters(letters, TEMP_RAND);
        letters[TEMP_RAND] = '\0';
        snprintf(tmp, cap, "%s%s.%.*s%s%s%s", dir, dn ? "/" : "", (int)bn,
                 base, TEMP_MARK, letters, TEMP_END);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0666);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    tfm_code rc = TFM_OK;
    if (fd < 0) {
        rc = io_error(who, "create a file in the folder of", path, errno);
        goto done;
    }
    if (write_all(fd, data, n) != 0 || fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        unlink(tmp);
        rc = io_error(who, "write", path, err);
        goto done;
    }
    /* The rename is durable once the folder's entry is on disk; some
     * file systems cannot fsync a folder (EINVAL): nothing to do then. */
    int dfd = open(dn ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL && errno != EROFS)
            rc = io_error(who, "sync the folder of", path, errno);
        close(dfd);
    }
    tfm_file_remove_stale_temps(dir, TFM_STALE_TEMP_SECONDS);
done:
    free(tmp);
    free(dir);
    return rc;
}

/* Compiling native fused programs and caching them. See Note [Native
 * code cache].
 *
 * Note [Native code cache]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * A compiled program is code this process runs, so nobody else may be
 * able to choose it. The cache directory ($TFMINI_CACHE_DIR/native, else
 * $XDG_CACHE_HOME/tfmini/native, else ~/.cache/tfmini/native) is opened
 * one component at a time from "/" with openat(O_DIRECTORY|O_NOFOLLOW),
 * each checked as ssh checks ~/.ssh: owned by root or by us, and not
 * writable by group or others unless sticky (/tmp); the last one must be
 * ours and writable by us alone. A symlink anywhere in the path is
 * refused. Everything after that goes through the directory's fd: the
 * source is created with openat(O_EXCL), the compiler runs with that
 * directory as its working directory (posix_spawn's fchdir) and relative
 * names, and a .so is opened with openat(O_NOFOLLOW), checked with fstat
 * (a regular file, ours, not writable by group or others) and loaded
 * with dlopen("/proc/self/fd/D/<name>"), D the checked directory's fd:
 * a magic link to the directory inode we checked, in which only we can
 * change what a name refers to. Swapping a folder of the path after
 * the checks (rename, renameat2 RENAME_EXCHANGE) therefore changes
 * nothing we read: every later access names the inode we checked,
 * never the path, so the race has no window by construction. When anything is off, a warning goes to stderr (once per
 * message) and the node keeps the block evaluator.
 *
 * Bound: after each compile, the directory's files are pruned, oldest
 * modification time first, until they take at most
 * $TFMINI_NATIVE_CACHE_MB megabytes (default 64, some thousands of
 * programs; fractions allowed).
 * Loading a program from the disk touches it, so pruning is LRU.
 * TFMINI_NATIVE=0 turns compiling and loading off entirely. */
#include "native_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Flags of the generated code: those of the kernels (setup.py), with
 * contraction of a*b+c into an FMA off, as -std=c11 implies for the
 * kernels, so that exact ops round as they do unfused. */
static const char *const cc_flags[] = {
    "-O3", "-march=native", "-std=c11", "-ffp-contract=off",
    "-fno-math-errno", "-fopenmp-simd", "-fPIC", "-shared", "-w",
#if defined(__SANITIZE_ADDRESS__)
    /* A sanitized build (tests/sanitize.sh) checks the generated loops
     * too. */
    "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
#endif
};

#define DEFAULT_CACHE_MB 64

/* Compiled programs of this process by key; never unloaded, so the
 * function pointers plans hold stay valid. fn NULL: compiling failed,
 * do not try again. */
typedef struct entry {
    uint64_t key;
    tfm_fused_native_fn fn;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache;

int
tfm_native_enabled(void)
{
    const char *v = getenv("TFMINI_NATIVE");
    return !(v && (!strcmp(v, "0") || !strcmp(v, "off") ||
                   !strcmp(v, "false")));
}

/* A warning on stderr, unless it is the one said last (a cache refused
 * once is refused for every program). Called under lock. */
static void
warn(const char *fmt, ...)
{
    static char last[1024];
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!strcmp(msg, last))
        return;
    snprintf(last, sizeof last, "%s", msg);
    fprintf(stderr, "tfmini: %s; big fused nodes run in the block "
            "evaluator\n", msg);
}

static uint64_t
fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static const char *
compiler(void)
{
    const char *cc = getenv("TFMINI_CC");
    return cc && *cc ? cc : "cc";
}

/* What the code was compiled for (-march=native): /proc/cpuinfo's first
 * model name and flags lines, so that a cache directory shared between
 * machines (an NFS home) never loads code for another CPU. "" elsewhere. */
static const char *
cpu_id(void)
{
    static char id[4096];
    static int done;
    if (done)
        return id;
    done = 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return id;
    char line[4096];
    size_t len = 0;
    int model = 0, flags = 0;
    while ((!model || !flags) && fgets(line, sizeof line, f)) {
        int *seen = !strncmp(line, "model name", 10) ? &model
                  : !strncmp(line, "flags", 5) ? &flags : NULL;
        if (!seen || *seen)
            continue;
        *seen = 1;
        size_t n = strlen(line);
        if (len + n >= sizeof id)
            n = sizeof id - 1 - len;
        memcpy(id + len, line, n);
        len += n;
        id[len] = 0;
    }
    fclose(f);
    return id;
}

/* ---- the directory ---- */

static int
cache_path(char *out, size_t cap)
{
    const char *d = getenv("TFMINI_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
               *h = getenv("HOME");
    int k = d && *d ? snprintf(out, cap, "%s/native", d)
          : x && *x ? snprintf(out, cap, "%s/tfmini/native", x)
          : h && *h ? snprintf(out, cap, "%s/.cache/tfmini/native", h)
          : -1;
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

/* Why directory st (the last one of the path when last) may not lead to
 * code we load, or NULL when it may. */
static const char *
dir_problem(const struct stat *st, int last)
{
    uid_t me = geteuid();
    if (last)
        return st->st_uid != me ? "not owned by this user"
             : (st->st_mode & (S_IWGRP | S_IWOTH))
                 ? "writable by group or others" : NULL;
    if (st->st_uid != me && st->st_uid != 0)
        return "a parent is owned by another user";
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return "a parent is writable by group or others";
    return NULL;
}

/* The directory path, opened component by component (creating missing
 * ones, mode 0700) and checked (Note [Native code cache]); -1 with *why
 * set when refused. */
static int
open_dir(const char *path, const char **why)
{
    *why = "not an absolute path";
    if (path[0] != '/')
        return -1;
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || (*why = dir_problem(&st, 0))) {
        if (fd >= 0)
            close(fd);
        *why = fd < 0 ? strerror(errno) : *why;
        return -1;
    }
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (!n)
            break;
        char comp[NAME_MAX + 1];
        if (n > NAME_MAX || (n == 2 && !strncmp(p, "..", 2))) {
            *why = "a component is too long or \"..\"";
            close(fd);
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        p += n;
        while (*p == '/')
            p++;
        if (!strcmp(comp, "."))
            continue;
        int last = !*p;
        if (mkdirat(fd, comp, 0700) && errno != EEXIST) {
            *why = strerror(errno);
            close(fd);
            return -1;
        }
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                    O_CLOEXEC);
        int err = errno;
        close(fd);
        if (next < 0) {
            *why = err == ELOOP || err == ENOTDIR
                       ? "a symlink or not a directory in the path"
                       : strerror(err);
            return -1;
        }
        fd = next;
        if (fstat(fd, &st) || (*why = dir_problem(&st, last))) {
            close(fd);
            return -1;
        }
    }
    *why = NULL;
    return fd;
}

/* ---- compiling and loading ---- */

/* The program in file name of directory dfd, or NULL. The file is opened
 * without following links and without blocking (a FIFO), checked, and
 * loaded through its fd, so what is loaded is what was checked. fresh:
 * we just compiled it (its mode follows our umask: take write access
 * from group and others); otherwise touch it for the LRU. *refused: it
 * exists but failed a check (warned). */
static tfm_fused_native_fn
load_at(int dfd, const char *dir, const char *name, int fresh, int *refused)
{
    *refused = 0;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
                               O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP) {
            *refused = 1;
            warn("%s/%s refused: a symlink", dir, name);
        }
        return NULL;
    }
    struct stat st;
    if (fresh && !fstat(fd, &st) && S_ISREG(st.st_mode))
        fchmod(fd, st.st_mode & 0700);
    const char *bad = fstat(fd, &st) ? strerror(errno)
                    : !S_ISREG(st.st_mode) ? "not a regular file"
                    : st.st_uid != geteuid() ? "not owned by this user"
                    : (st.st_mode & (S_IWGRP | S_IWOTH))
                        ? "writable by group or others" : NULL;
    if (bad) {
        close(fd);
        *refused = 1;
        warn("%s/%s refused: %s", dir, name, bad);
        return NULL;
    }
    if (!fresh)
        futimens(fd, NULL);
    /* Through the checked directory's fd, not the file's: dlopen hands
     * back an object already loaded under the same name, and a bare
     * "/proc/self/fd/N" names a different file each time N is reused.
     * The name inside the directory is the program's own, and only we
     * can change what it names (open_dir checked that). */
    char proc[128];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d/%s", dfd, name);
    void *h = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
    close(fd);
    if (!h)
        return NULL;
    union { void *p; tfm_fused_native_fn fn; } u;
    u.p = dlsym(h, "tfm_native");
    if (!u.p)
        dlclose(h);
    return u.p ? u.fn : NULL;
}

static int
write_at(int dfd, const char *name, const char *text)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                               O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(text), done = 0;
    while (done < n) {
        ssize_t k = write(fd, text + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        done += (size_t)k;
    }
    return close(fd) || done != n ? -1 : 0;
}

/* cc <flags> -o so src -lm in directory dfd, its messages into log
 * there. 0 on success. */
static int
run_compiler(int dfd, const char *src, const char *so, const char *log)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 29)
    enum { NFLAGS = sizeof cc_flags / sizeof cc_flags[0] };
    char *argv[NFLAGS + 7];
    int a = 0;
    argv[a++] = (char *)compiler();
    for (int i = 0; i < NFLAGS; i++)
        argv[a++] = (char *)cc_flags[i];
    argv[a++] = "-o";
    argv[a++] = (char *)so;
    argv[a++] = (char *)src;
    argv[a++] = "-lm";
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa))
        return -1;
    pid_t pid;
    /* The child works in the directory we checked, whatever its path
     * names by now. */
    int rc = posix_spawn_file_actions_addfchdir_np(&fa, dfd) ||
             posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
                                              O_RDONLY, 0) ||
             posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY |
                                              O_CREAT | O_TRUNC |
                                              O_NOFOLLOW, 0600) ||
             posix_spawn_file_actions_adddup2(&fa, 1, 2) ||
             posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        /* SIGCHLD ignored (or another thread reaped it): the child has
         * exited, status unknown; the caller's load tells. */
        if (errno == ECHILD)
            return 0;
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
#else
    (void)dfd; (void)src; (void)so; (void)log;
    return -1;          /* no fchdir for the child: no safe compile */
#endif
}

/* ---- the bound ---- */

typedef struct cached_file {
    char name[NAME_MAX + 1];
    off_t size;
    struct timespec mtime;
} cached_file;

static int
older(const void *a, const void *b)
{
    const struct timespec *x = &((const cached_file *)a)->mtime,
                          *y = &((const cached_file *)b)->mtime;
    return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1)
         : x->tv_nsec != y->tv_nsec ? (x->tv_nsec < y->tv_nsec ? -1 : 1) : 0;
}

static double
cache_cap_bytes(void)
{
    const char *v = getenv("TFMINI_NATIVE_CACHE_MB");
    char *end;
    double mb = v && *v ? strtod(v, &end) : DEFAULT_CACHE_MB;
    if (v && *v && (*end || !(mb >= 0)))
        mb = DEFAULT_CACHE_MB;
    return mb * 1024 * 1024;
}

/* Deletes the least recently used files of directory dfd until they
 * take at most the cap; keep (the program just made) stays. */
static void
prune(int dfd, const char *keep)
{
    double cap = cache_cap_bytes();
    int fd = dup(dfd);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    cached_file *files = NULL;
    size_t n = 0, room = 0;
    double total = 0;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode))
            continue;
        total += (double)st.st_size;
        /* Kept: the program just made, and another process's compile
         * still under way (key.pid.c, .so, .log of the last 10
         * minutes). */
        int temporary = strchr(e->d_name, '.') != strrchr(e->d_name, '.');
        if (!strcmp(e->d_name, keep) ||
            (temporary && st.st_mtim.tv_sec > now - 600))
            continue;
        if (n == room) {
            size_t r = room ? room * 2 : 64;
            cached_file *f = realloc(files, r * sizeof *f);
            if (!f)
                break;
            files = f;
            room = r;
        }
        snprintf(files[n].name, sizeof files[n].name, "%s", e->d_name);
        files[n].size = st.st_size;
        files[n].mtime = st.st_mtim;
        n++;
    }
    closedir(d);
    if (n)      /* qsort of no elements may not take NULL (C11 7.22.5) */
        qsort(files, n, sizeof *files, older);
    for (size_t i = 0; i < n && total > cap; i++)
        if (!unlinkat(dfd, files[i].name, 0))
            total -= (double)files[i].size;
    free(files);
}

/* ---- the entry point ---- */

tfm_fused_native_fn
tfm_native_cache_get(const char *src)
{
    if (!tfm_native_enabled())
        return NULL;
    pthread_mutex_lock(&lock);
    uint64_t key = fnv1a(0xcbf29ce484222325ull, compiler());
    key = fnv1a(key, cpu_id());
    for (size_t i = 0; i < sizeof cc_flags / sizeof cc_flags[0]; i++)
        key = fnv1a(key, cc_flags[i]);
    key = fnv1a(key, src);
    for (entry *e = cache; e; e = e->next)
        if (e->key == key) {
            pthread_mutex_unlock(&lock);
            return e->fn;
        }
    tfm_fused_native_fn fn = NULL;
    char dir[2048];
    const char *why = "no cache directory ($HOME unset)";
    int dfd = cache_path(dir, sizeof dir) ? -1 : open_dir(dir, &why);
    if (dfd < 0) {
        warn("native code cache %s refused (%s)", dir, why);
    } else {
        unsigned long long k = (unsigned long long)key;
        long pid = (long)getpid();
        char so[64], c[64], tmp_so[96], tmp_c[96], log[96];
        snprintf(so, sizeof so, "%016llx.so", k);
        snprintf(c, sizeof c, "%016llx.c", k);
        snprintf(log, sizeof log, "%016llx.%ld.log", k, pid);
        /* Private names until the result is whole: other processes may
         * compile the same program at the same time. */
        snprintf(tmp_so, sizeof tmp_so, "%016llx.%ld.so", k, pid);
        snprintf(tmp_c, sizeof tmp_c, "%016llx.%ld.c", k, pid);
        int refused;
        fn = load_at(dfd, dir, so, 0, &refused);
        /* Loaded before it is published: a compiler that died half way
         * (its status unknown when SIGCHLD is ignored) leaves nothing
         * in the cache. */
        if (!fn && !refused) {
            unlinkat(dfd, tmp_c, 0);
            unlinkat(dfd, tmp_so, 0);
            if (!write_at(dfd, tmp_c, src) &&
                !run_compiler(dfd, tmp_c, tmp_so, log) &&
                (fn = load_at(dfd, dir, tmp_so, 1, &refused)) &&
                !renameat(dfd, tmp_so, dfd, so)) {
                renameat(dfd, tmp_c, dfd, c);
                unlinkat(dfd, log, 0);
            }
            unlinkat(dfd, tmp_c, 0);
            unlinkat(dfd, tmp_so, 0);
            prune(dfd, so);
        }
        close(dfd);
    }
    entry *e = malloc(sizeof *e);
    if (e) {
        e->key = key;
        e->fn = fn;
        e->next = cache;
        cache = e;
    }
    pthread_mutex_unlock(&lock);
    return fn;
}

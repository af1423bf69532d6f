/* tfmini_model_server: TF Serving's REST API over tfmini's C runtime.
 *
 *   tfmini_model_server --rest_api_port=8501 --model_name=NAME
 *                       --model_base_path=DIR [options]
 *
 * DIR holds numbered version folders (DIR/1, DIR/2, ...), each a saved
 * model; the newest is served, and a newer folder is loaded and swapped
 * in every --file_system_poll_wait_seconds (requests in flight finish
 * on the version they started with). HTTP is libmicrohttpd's; request
 * bodies are parsed by cJSON (jparse.h), other JSON is jansson's.
 * --model_config_file names several models (TF Serving's
 * model_config_list { config { name: .. base_path: .. } ... }).
 * Options besides TF Serving's:
 *   --rest_api_host=ADDR      listen address (default 0.0.0.0)
 *   --max_body_bytes=N        larger request bodies get 413 (64 MiB)
 *   --rest_api_timeout_in_ms  (TF Serving's) a connection idle this
 *                             long is closed (default 30000)
 *   --rest_api_num_threads    (TF Serving's) worker threads (default:
 *                             the CPUs the process may run on, at
 *                             least 2)
 * Server-side batching (batch.h), TF Serving's flags:
 *   --enable_batching[=true]  merge concurrent predicts into one run
 *   --batching_parameters_file=FILE  TF Serving's BatchingParameters
 *                             (max_batch_size, batch_timeout_micros,
 *                             num_batch_threads, max_enqueued_batches)
 * and, for the same parameters without a file, --max_batch_size=N
 * (default 1000 rows), --batch_timeout_micros=N (default 0: a batch
 * runs as soon as a batch thread is free, holding what queued
 * meanwhile), --num_batch_threads=N (default: the CPUs the process may
 * run on).
 *   --tensorflow_intra_op_parallelism=N  (TF Serving's) OpenMP threads
 *                             per run (default 0: OpenMP's default, all
 *                             cores; with many concurrent requests 1
 *                             keeps the cores from being oversubscribed) */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "config.h"
#include "jparse.h"
#include "jsonw.h"
#include "rest.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_RESULT;
#else
typedef enum MHD_Result MHD_RESULT;
#endif

typedef struct config {
    int port, threads, poll_seconds, batching;
    long long max_body, timeout_ms;
    const char *host, *name, *base_path, *config_file, *batching_file;
    batch_options batch;
} config;

static config cfg = {8501, 0, 1, 0, 64LL << 20, 30000, "0.0.0.0", NULL,
                     NULL, NULL, NULL, {1000, 0, 0, 1 << 20, 0}};
static batcher *the_batcher;
static served_model *models[MAX_MODELS];
static int nmodels;
static volatile sig_atomic_t stopping;

/* A request's state across handler calls. With batching, a queued
 * predict suspends its connection: `lock` orders the suspend before the
 * batch thread's resume, and `pending` is replied to when the handler
 * is called again after the resume. One per connection, made when it
 * opens and reset after each of its requests (keep-alive clients send
 * many): the body buffer and the lock are not made again per request. */
typedef struct request {
    char *body;
    size_t len, cap;
    int too_big;
    struct timespec start;
    pthread_mutex_t lock;
    struct MHD_Connection *conn;
    rest_pending *pending;
} request;

/* libmicrohttpd's per-connection pool (request line, headers, read
 * buffer, reply headers): it zeroes the pool's free part after every
 * request, 32 KiB by default, ~3% of an MLP request's CPU (perf). Bodies
 * do not live there (they are copied out as they arrive), so 16 KiB
 * leaves ~14 KiB for a request's headers, which must fit. */
#define CONNECTION_POOL_BYTES (16 << 10)

/* A body buffer larger than this is freed after its request rather
 * than kept for the connection's next one. */
#define KEEP_BODY_BYTES (64 << 10)

/* From a batch thread: the queued predict has run. */
static void
wake(void *ctx)
{
    request *req = ctx;
    pthread_mutex_lock(&req->lock);
    MHD_resume_connection(req->conn);
    pthread_mutex_unlock(&req->lock);
}

static MHD_RESULT
send_reply(struct MHD_Connection *c, reply r)
{
    struct MHD_Response *resp;
    if (!r.body) {
        /* Text in this thread's reply buffer, which the next request
         * reuses: libmicrohttpd sends later, from its copy. */
        resp = MHD_create_response_from_buffer(r.len, (void *)r.text,
                                               MHD_RESPMEM_MUST_COPY);
    } else {
        /* json_dumps allocates with jansson's functions: freed with
         * them, libmicrohttpd sends its copy. */
        static const char oom[] = "{\"error\": \"out of memory\"}";
        char *text = json_dumps(r.body, JSON_COMPACT |
                                JSON_REAL_PRECISION(9));
        json_decref(r.body);
        if (!text)
            r.status = 500;
        resp = MHD_create_response_from_buffer(
            text ? strlen(text) : sizeof oom - 1, text ? text : (char *)oom,
            MHD_RESPMEM_MUST_COPY);
        json_free_t jfree;
        json_get_alloc_funcs(NULL, &jfree);
        if (text)
            jfree(text);
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_RESULT ok = MHD_queue_response(c, r.status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static long long
elapsed_ms(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000LL +
           (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static reply
too_big(void)
{
    char msg[128];
    snprintf(msg, sizeof msg, "the request body is over %lld bytes "
             "(--max_body_bytes)", cfg.max_body);
    return (reply){413, json_pack("{s:s}", "error", msg), NULL, 0};
}

static MHD_RESULT
handle(void *cls, struct MHD_Connection *c, const char *url,
       const char *method, const char *version, const char *upload,
       size_t *upload_size, void **state)
{
    static __thread int threads_set;
    if (!threads_set) {
        set_intra_op_threads(cfg.batch.intra_op_threads);
        threads_set = 1;
    }
    request *req = *state;
    if (!req) {
        /* First call: headers only. A declared length over the limit is
         * refused before the body is read. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     "Content-Length");
        if (cl && strtoll(cl, NULL, 10) > cfg.max_body)
            return send_reply(c, too_big());
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (!ci || !(req = ci->socket_context))
            return MHD_NO;          /* out of memory when it opened */
        clock_gettime(CLOCK_MONOTONIC, &req->start);
        *state = req;
        return MHD_YES;
    }
    if (*upload_size) {
        /* MHD's timeout closes a connection that goes quiet; one that
         * trickles its body (a byte now and then) is cut off here once
         * the whole request has taken longer than the timeout: with a
         * 408 where libmicrohttpd can still queue one, else (0.9.75
         * cannot while a body arrives) by closing the connection. */
        if (elapsed_ms(&req->start) > cfg.timeout_ms) {
            *upload_size = 0;
            char msg[128];
            snprintf(msg, sizeof msg, "the request body took over %lld ms "
                     "to arrive (--rest_api_timeout_in_ms)", cfg.timeout_ms);
            return send_reply(c, (reply){408, json_pack("{s:s}", "error",
                                                        msg), NULL, 0});
        }
        size_t need = req->len + *upload_size + 1;
        if (!req->too_big && req->len + *upload_size <= (size_t)cfg.max_body) {
            if (need > req->cap) {
                size_t cap = req->cap * 2 > need ? req->cap * 2 : need;
                char *b = realloc(req->body, cap);
                if (b) {
                    req->body = b;
                    req->cap = cap;
                }
            }
            if (need <= req->cap) {
                memcpy(req->body + req->len, upload, *upload_size);
                req->len += *upload_size;
            } else {
                req->too_big = 1;
            }
        } else {
            req->too_big = 1;       /* chunked and over the limit */
            free(req->body);
            req->body = NULL;
            req->len = req->cap = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (req->pending) {             /* resumed: the batch has run */
        rest_pending *p = req->pending;
        req->pending = NULL;
        return send_reply(c, rest_finish(p));
    }
    if (req->too_big)
        return send_reply(c, too_big());
    rest_defer defer = {the_batcher, wake, req};
    pthread_mutex_lock(&req->lock);
    reply r = rest_handle(models, nmodels, method, url, req->body, req->len,
                          the_batcher ? &defer : NULL, &req->pending);
    if (r.status == 0)
        MHD_suspend_connection(c);
    pthread_mutex_unlock(&req->lock);
    return r.status ? send_reply(c, r) : MHD_YES;
}

static void
completed(void *cls, struct MHD_Connection *c, void **state,
          enum MHD_RequestTerminationCode why)
{
    request *req = *state;
    if (req) {
        /* A resumed predict whose client went away: its run is over
         * (the resume came after it), only the reply is dropped. */
        if (req->pending)
            json_decref(rest_finish(req->pending).body);
        req->pending = NULL;
        /* The batch thread's wake may still be returning from the
         * resume that led here: it leaves the lock before req is
         * reused or freed. */
        pthread_mutex_lock(&req->lock);
        pthread_mutex_unlock(&req->lock);
        if (req->cap > KEEP_BODY_BYTES) {
            free(req->body);
            req->body = NULL;
            req->cap = 0;
        }
        req->len = 0;
        req->too_big = 0;
        *state = NULL;
    }
}

/* A connection's request state: made when it opens, freed when it
 * closes (after its last request's `completed`). */
static void
connection(void *cls, struct MHD_Connection *c, void **socket_context,
           enum MHD_ConnectionNotificationCode what)
{
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        request *req = calloc(1, sizeof *req);
        if (req) {
            pthread_mutex_init(&req->lock, NULL);
            req->conn = c;
        }
        *socket_context = req;
        return;
    }
    request *req = *socket_context;
    if (req) {
        pthread_mutex_destroy(&req->lock);
        free(req->body);
        free(req);
        *socket_context = NULL;
    }
}

static void
on_signal(int sig)
{
    stopping = 1;
}

/* --flag=value: value if argv names flag, else NULL. */
static const char *
flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(arg, "--", 2) != 0 || strncmp(arg + 2, name, n) != 0 ||
        arg[2 + n] != '=')
        return NULL;
    return arg + 3 + n;
}

static int
parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if ((v = flag(a, "rest_api_port")))
            cfg.port = atoi(v);
        else if ((v = flag(a, "model_name")))
            cfg.name = v;
        else if ((v = flag(a, "model_base_path")))
            cfg.base_path = v;
        else if ((v = flag(a, "file_system_poll_wait_seconds")))
            cfg.poll_seconds = atoi(v);
        else if ((v = flag(a, "rest_api_host")))
            cfg.host = v;
        else if ((v = flag(a, "max_body_bytes")))
            cfg.max_body = atoll(v);
        else if ((v = flag(a, "rest_api_timeout_in_ms")))
            cfg.timeout_ms = atoll(v);
        else if ((v = flag(a, "rest_api_num_threads")))
            cfg.threads = atoi(v);
        else if ((v = flag(a, "model_config_file")))
            cfg.config_file = v;
        else if (strcmp(a, "--enable_batching") == 0)
            cfg.batching = 1;
        else if ((v = flag(a, "enable_batching")))
            cfg.batching = strcmp(v, "true") == 0 || strcmp(v, "1") == 0;
        else if ((v = flag(a, "batching_parameters_file")))
            cfg.batching_file = v;
        else if ((v = flag(a, "max_batch_size")))
            cfg.batch.max_batch_size = atoi(v);
        else if ((v = flag(a, "batch_timeout_micros")))
            cfg.batch.batch_timeout_micros = atoll(v);
        else if ((v = flag(a, "num_batch_threads")))
            cfg.batch.num_batch_threads = atoi(v);
        else if ((v = flag(a, "tensorflow_intra_op_parallelism")))
            cfg.batch.intra_op_threads = atoi(v);
        else {
            fprintf(stderr, "tfmini_model_server: unknown flag %s\n", a);
            return -1;
        }
    }
    if (!cfg.config_file != !!(cfg.name && cfg.base_path)) {
        fprintf(stderr, "tfmini_model_server: give either --model_name and "
                "--model_base_path or --model_config_file\n");
        return -1;
    }
    /* The CPUs this process may run on (taskset, cgroup cpusets), not
     * all the machine's: more workers than that only take turns. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask))
        ncpu = CPU_COUNT(&mask);
    ncpu = ncpu < 1 ? 1 : ncpu > 256 ? 256 : ncpu;
    if (!cfg.threads)
        cfg.threads = (int)(ncpu < 2 ? 2 : ncpu);
    if (!cfg.batch.num_batch_threads)
        cfg.batch.num_batch_threads = (int)ncpu;
    if (cfg.batching_file) {
        char err[512];
        if (batch_options_read(cfg.batching_file, &cfg.batch, err,
                               sizeof err)) {
            fprintf(stderr, "tfmini_model_server: %s\n", err);
            return -1;
        }
    }
    if (cfg.port <= 0 || cfg.port > 65535 ||
        cfg.threads < 1 || cfg.max_body < 1 || cfg.timeout_ms < 1 ||
        cfg.batch.max_batch_size < 1 || cfg.batch.num_batch_threads < 1 ||
        cfg.batch.num_batch_threads > 256 ||
        cfg.batch.batch_timeout_micros < 0 ||
        cfg.batch.intra_op_threads < 0) {
        fprintf(stderr, "usage: tfmini_model_server --rest_api_port=N "
                "(--model_name=NAME --model_base_path=DIR | "
                "--model_config_file=FILE) "
                "[--file_system_poll_wait_seconds=N] [--rest_api_host=ADDR] "
                "[--max_body_bytes=N] [--rest_api_timeout_in_ms=N] "
                "[--rest_api_num_threads=N] [--enable_batching] "
                "[--batching_parameters_file=FILE] [--max_batch_size=N] "
                "[--batch_timeout_micros=N] [--num_batch_threads=N] "
                "[--tensorflow_intra_op_parallelism=N]\n");
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (parse(argc, argv))
        return 2;
    jp_install();
    char err[512];
    static model_entry entries[MAX_MODELS];
    int n = 1;
    if (cfg.config_file) {
        if ((n = config_read(cfg.config_file, entries, MAX_MODELS, err,
                             sizeof err)) < 0) {
            fprintf(stderr, "tfmini_model_server: %s\n", err);
            return 2;
        }
    } else {
        snprintf(entries[0].name, sizeof entries[0].name, "%s", cfg.name);
        snprintf(entries[0].base_path, sizeof entries[0].base_path, "%s",
                 cfg.base_path);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(entries[i].name, entries[j].name) == 0) {
                fprintf(stderr, "tfmini_model_server: model %s is named "
                        "twice\n", entries[i].name);
                return 2;
            }
    for (nmodels = 0; nmodels < n; nmodels++)
        if (!(models[nmodels] = served_model_new(
                entries[nmodels].name, entries[nmodels].base_path, err,
                sizeof err))) {
            fprintf(stderr, "tfmini_model_server: %s\n", err);
            return 1;
        }
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)cfg.port);
    if (inet_pton(AF_INET, cfg.host, &addr.sin_addr) != 1) {
        fprintf(stderr, "tfmini_model_server: bad --rest_api_host %s\n",
                cfg.host);
        return 2;
    }
    if (cfg.batching && !(the_batcher = batcher_new(&cfg.batch))) {
        fprintf(stderr, "tfmini_model_server: cannot start the batch "
                "threads\n");
        return 1;
    }
    unsigned timeout_s = (unsigned)((cfg.timeout_ms + 999) / 1000);
    /* With batching every predict suspends and resumes its connection:
     * under epoll that is two epoll_ctl calls and a second recv per
     * request (strace: 8.9 syscalls a request at 64 connections, 4.6
     * under poll, where a suspended socket is just left out of the next
     * poll). poll's cost grows with the connections a worker holds, so
     * the server without batching, whose sockets are never suspended,
     * keeps epoll. */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD |
        (the_batcher ? MHD_USE_POLL : MHD_USE_AUTO) |
        MHD_USE_ERROR_LOG | (the_batcher ? MHD_ALLOW_SUSPEND_RESUME : 0),
        (uint16_t)cfg.port, NULL, NULL, handle, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg.threads,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_POOL_BYTES,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_NOTIFY_CONNECTION, connection, NULL,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "tfmini_model_server: cannot listen on %s:%d\n",
                cfg.host, cfg.port);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    fprintf(stderr, "tfmini_model_server: serving %d model(s) on %s:%d\n",
            nmodels, cfg.host, cfg.port);
    /* As TF Serving: a poll wait of 0 or less loads once and never
     * polls (this loop then only waits for a signal: it used to spin
     * on a core). */
    while (!stopping) {
        int wait = cfg.poll_seconds > 0 ? cfg.poll_seconds * 10 : 10;
        for (int t = 0; t < wait && !stopping; t++)
            usleep(100000);
        if (!stopping && cfg.poll_seconds > 0)
            for (int i = 0; i < nmodels; i++)
                served_model_poll(models[i]);
    }
    /* Queued predicts run and resume their connections before the
     * daemon stops (it must not stop with a connection suspended). */
    batcher_free(the_batcher);
    MHD_stop_daemon(d);
    return 0;
}

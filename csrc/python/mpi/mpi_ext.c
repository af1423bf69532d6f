/* tfmini.distribute._mpi: the collectives of MultiWorkerMirroredStrategy
 * over Open MPI's C API (tfmini/distribute/multi_worker.py).
 *
 * Note [Collectives with a deadline]: a blocking MPI_Allreduce waits
 * forever for a peer that is stuck or gone (Open MPI's TCP transport does
 * not always see a dead peer, e.g. one stopped by a debugger or on a
 * partitioned host). Every collective here is the non-blocking form
 * (MPI_Iallreduce, MPI_Ibcast, MPI_Ibarrier) polled with MPI_Testsome
 * until a deadline, with the GIL released; every 50 ms the GIL is taken
 * back to run Python's signal handlers, so that the SIGTERM mpirun sends
 * when another worker dies becomes a Python exception in the waiting
 * worker instead of a silent kill. After a timeout the pending requests
 * can never complete: the communicator is marked broken, later calls
 * fail at once, and finalize() skips MPI_Finalize (which would wait for
 * them).
 *
 * Note [Gradient buckets]: allreduce(arrays, bucket_bytes) fuses runs of
 * same-dtype arrays into buckets of about bucket_bytes, packs each into
 * one buffer and starts its MPI_Iallreduce before packing the next, so
 * the packing of later buckets overlaps the communication of earlier
 * ones (Horovod's tensor fusion); each bucket is unpacked as soon as it
 * completes. An array at least bucket_bytes big is reduced in place,
 * without a copy. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank = -1, g_size = 0, g_broken = 0, g_we_inited = 0;
static char g_broken_why[MPI_MAX_ERROR_STRING + 128];

/* Note [Progress thread]: Open MPI moves a non-blocking collective on only
 * inside MPI calls, so an all-reduce started during the backward pass
 * (Note [Started all-reduces]) would stall between the caller's polls.
 * While any started all-reduce is in flight (or a caller waits for a
 * collective, between its own polls), a thread of ours calls into
 * MPI's progress engine (MPI_Iprobe on tags collectives never use: it
 * matches nothing of theirs, it only progresses) every PROGRESS_NS. MPI
 * runs at MPI_THREAD_SERIALIZED, so every MPI call of this module holds
 * g_mpi_lock; the thread never touches a request (the caller completes
 * them: no request is ever used by two threads). It sleeps on a condition
 * when nothing is in flight (after a failure too: every failed or dropped
 * request leaves the count), and stops before MPI_Finalize. */
#define PROGRESS_NS 50000L
static pthread_mutex_t g_mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_progress_cv = PTHREAD_COND_INITIALIZER;
static pthread_t g_progress_thread;
static int g_progress_started = 0, g_progress_stop = 0, g_inflight = 0;
static int g_progress_ok = 0;   /* MPI gave MPI_THREAD_SERIALIZED or more */

#define MPI_LOCKED(call)                                                   \
    ({                                                                     \
        pthread_mutex_lock(&g_mpi_lock);                                   \
        int rc_ = (call);                                                  \
        pthread_mutex_unlock(&g_mpi_lock);                                 \
        rc_;                                                               \
    })

static void *progress_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&g_mpi_lock);
    while (!g_progress_stop) {
        if (g_inflight <= 0) {
            pthread_cond_wait(&g_progress_cv, &g_mpi_lock);
            continue;
        }
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                   MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&g_mpi_lock);
        struct timespec d = {0, PROGRESS_NS};
        nanosleep(&d, NULL);
        pthread_mutex_lock(&g_mpi_lock);
    }
    pthread_mutex_unlock(&g_mpi_lock);
    return NULL;
}

/* One more (+1) or one fewer (-1) started all-reduce in flight. */
static void inflight_add(int k)
{
    pthread_mutex_lock(&g_mpi_lock);
    g_inflight += k;
    if (k > 0 && g_progress_ok && !g_progress_started && !g_progress_stop) {
        if (pthread_create(&g_progress_thread, NULL, progress_main, NULL)
            == 0)
            g_progress_started = 1;
    }
    if (k > 0)
        pthread_cond_signal(&g_progress_cv);
    pthread_mutex_unlock(&g_mpi_lock);
}

static void progress_stop(void)
{
    pthread_mutex_lock(&g_mpi_lock);
    int started = g_progress_started;
    g_progress_stop = 1;
    pthread_cond_signal(&g_progress_cv);
    pthread_mutex_unlock(&g_mpi_lock);
    if (started)
        pthread_join(g_progress_thread, NULL);
    g_progress_started = 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static PyObject *mpi_error(const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_LOCKED(MPI_Error_string(code, msg, &len)) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error code %d", code);
    g_broken = 1;
    snprintf(g_broken_why, sizeof g_broken_why, "%s failed: %s", what, msg);
    PyErr_Format(PyExc_ConnectionError,
                 "%s failed on worker %d of %d: %s (a worker has probably "
                 "exited; the job cannot go on)", what, g_rank, g_size, msg);
    return NULL;
}

static int check_ready(const char *what)
{
    if (g_rank < 0) {
        PyErr_Format(PyExc_RuntimeError, "%s: MPI is not initialized "
                     "(call init() first)", what);
        return -1;
    }
    if (g_broken) {
        PyErr_Format(PyExc_ConnectionError, "%s on worker %d: an earlier "
                     "collective failed (%s); the workers are out of step",
                     what, g_rank, g_broken_why);
        return -1;
    }
    return 0;
}

/* Open MPI loads its transports as plugins that expect libmpi's symbols
 * to be global; Python loads this module RTLD_LOCAL. */
static void make_libmpi_global(void)
{
    Dl_info info;
    if (dladdr((void *)&MPI_Init, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

static PyObject *py_init(PyObject *self, PyObject *args)
{
    int inited = 0, provided = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        make_libmpi_global();
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) {
            PyErr_SetString(PyExc_RuntimeError,
                            "MPI_Init_thread failed: was this process "
                            "started by mpirun?");
            return NULL;
        }
        g_we_inited = 1;
    } else {
        MPI_Query_thread(&provided);
    }
    g_progress_ok = provided >= MPI_THREAD_SERIALIZED;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    return Py_BuildValue("ii", g_rank, g_size);
}

/* Polls reqs[0..n) until all complete or the deadline passes. done_fn,
 * when given, is called (GIL released) for each request as it completes.
 * Returns 0, or -1 with a Python exception set. */
typedef void (*done_fn)(int index, void *arg);

static int wait_all(const char *what, MPI_Request *reqs, int n,
                    double timeout, done_fn on_done, void *arg)
{
    int left = n, rc = MPI_SUCCESS, timed_out = 0, outcount = 0;
    int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!idx) {
        PyErr_NoMemory();
        return -1;
    }
    double started = now_s();
    double deadline = timeout > 0 ? started + timeout : 0.0;
    /* The progress thread also runs while we wait (between our polls). */
    inflight_add(+1);
    double next_signals = now_s() + 0.05;
    long sleep_ns = 1000;
    unsigned spins = 0;
    PyThreadState *ts = PyEval_SaveThread();
    while (left > 0) {
        rc = MPI_LOCKED(MPI_Testsome(n, reqs, &outcount, idx,
                                     MPI_STATUSES_IGNORE));
        if (rc != MPI_SUCCESS)
            break;
        if (outcount == MPI_UNDEFINED)
            break;
        if (outcount > 0) {
            for (int k = 0; k < outcount; k++)
                if (on_done)
                    on_done(idx[k], arg);
            left -= outcount;
            sleep_ns = 1000;
            continue;
        }
        double t = now_s();
        if (deadline > 0 && t > deadline) {
            timed_out = 1;
            break;
        }
        if (t > next_signals) {
            next_signals = t + 0.05;
            PyEval_RestoreThread(ts);
            int sig = PyErr_CheckSignals();
            ts = PyEval_SaveThread();
            if (sig < 0)
                break;
        }
        /* Open MPI advances a non-blocking collective only inside
         * MPI_Test*, one round per call: poll hot for the first 20 ms,
         * which covers a step's all-reduce (now and then yielding the
         * core to a peer that may share it: yielding at every poll gives
         * the core away for a whole time slice on a loaded machine);
         * then back off to 100 us sleeps, for a slow or stalled peer. */
        if (t - started < 0.02) {
            if ((++spins & 255) == 0)
                sched_yield();
            continue;
        }
        struct timespec d = {0, sleep_ns};
        nanosleep(&d, NULL);
        if (sleep_ns < 100000)
            sleep_ns *= 2;
    }
    PyEval_RestoreThread(ts);
    inflight_add(-1);
    free(idx);
    if (left == 0)
        return 0;
    g_broken = 1;
    if (rc != MPI_SUCCESS) {
        mpi_error(what, rc);
        return -1;
    }
    if (timed_out) {
        snprintf(g_broken_why, sizeof g_broken_why,
                 "%s timed out after %g s", what, timeout);
        char msg[320];  /* PyErr_Format has no %g */
        snprintf(msg, sizeof msg, "%s timed out after %g s on worker %d of "
                 "%d: another worker is gone, stuck, or not making the same "
                 "collective calls", what, timeout, g_rank, g_size);
        PyErr_SetString(PyExc_TimeoutError, msg);
        return -1;
    }
    snprintf(g_broken_why, sizeof g_broken_why,
             "%s was interrupted by a signal", what);
    return -1;                     /* the signal handler's exception */
}

static int mpi_type(const Py_buffer *b, MPI_Datatype *t)
{
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    switch (*f) {
    case 'f': *t = MPI_FLOAT; return b->itemsize == 4 ? 0 : -1;
    case 'd': *t = MPI_DOUBLE; return b->itemsize == 8 ? 0 : -1;
    case 'i': *t = MPI_INT; return b->itemsize == 4 ? 0 : -1;
    case 'l': case 'q':
        *t = MPI_INT64_T; return b->itemsize == 8 ? 0 : -1;
    default: return -1;
    }
}

static int mpi_op(const char *name, MPI_Op *op)
{
    if (!strcmp(name, "sum")) *op = MPI_SUM;
    else if (!strcmp(name, "max")) *op = MPI_MAX;
    else if (!strcmp(name, "min")) *op = MPI_MIN;
    else return -1;
    return 0;
}

typedef struct {
    int first, count;       /* arrays [first, first + count) */
    char *packed;           /* NULL: one array reduced in place */
    Py_ssize_t bytes;
} bucket;

typedef struct {
    Py_buffer *bufs;
    bucket *buckets;
} unpack_arg;

static void unpack_bucket(int index, void *p)
{
    unpack_arg *a = p;
    bucket *b = &a->buckets[index];
    if (!b->packed)
        return;
    Py_ssize_t off = 0;
    for (int i = b->first; i < b->first + b->count; i++) {
        memcpy(a->bufs[i].buf, b->packed + off, (size_t)a->bufs[i].len);
        off += a->bufs[i].len;
    }
}

/* allreduce(arrays, op, bucket_bytes, timeout): each array (writable,
 * C-contiguous; float32/float64/int32/int64) replaced in place by its
 * reduction over all workers, in fused buckets (Note [Gradient
 * buckets]). */
static PyObject *py_allreduce(PyObject *self, PyObject *args)
{
    PyObject *list;
    const char *opname;
    Py_ssize_t bucket_bytes;
    double timeout;
    MPI_Op op;
    if (!PyArg_ParseTuple(args, "O!snd", &PyList_Type, &list, &opname,
                          &bucket_bytes, &timeout))
        return NULL;
    if (check_ready("all-reduce") < 0)
        return NULL;
    if (mpi_op(opname, &op) < 0) {
        PyErr_Format(PyExc_ValueError, "all-reduce: unknown op '%s'",
                     opname);
        return NULL;
    }
    int n = (int)PyList_GET_SIZE(list);
    Py_buffer *bufs = calloc((size_t)(n ? n : 1), sizeof(Py_buffer));
    MPI_Datatype *types = calloc((size_t)(n ? n : 1), sizeof(MPI_Datatype));
    bucket *buckets = calloc((size_t)(n ? n : 1), sizeof(bucket));
    MPI_Request *reqs = calloc((size_t)(n ? n : 1), sizeof(MPI_Request));
    int got = 0, nb = 0, ok = 0;
    if (!bufs || !types || !buckets || !reqs) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(list, got), &bufs[got],
                               PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS |
                               PyBUF_FORMAT) < 0)
            goto done;
        if (mpi_type(&bufs[got], &types[got]) < 0) {
            PyErr_Format(PyExc_TypeError, "all-reduce: array %d has "
                         "format '%s'; float32, float64, int32 or int64 "
                         "expected", got, bufs[got].format);
            got++;
            goto done;
        }
        if (bufs[got].len / bufs[got].itemsize > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "all-reduce: array %d has more "
                         "than 2**31 elements", got);
            got++;
            goto done;
        }
    }
    /* Buckets: consecutive same-dtype arrays, up to bucket_bytes. */
    for (int i = 0; i < n;) {
        bucket *b = &buckets[nb++];
        b->first = i;
        b->bytes = bufs[i].len;
        b->count = 1;
        i++;
        if (b->bytes >= bucket_bytes)
            continue;
        while (i < n && types[i] == types[b->first] &&
               b->bytes + bufs[i].len <= bucket_bytes) {
            b->bytes += bufs[i].len;
            b->count++;
            i++;
        }
    }
    int started = 0, rc = MPI_SUCCESS;
    Py_BEGIN_ALLOW_THREADS
    for (; started < nb; started++) {
        bucket *b = &buckets[started];
        MPI_Datatype t = types[b->first];
        int elems = (int)(b->bytes / bufs[b->first].itemsize);
        void *buf;
        if (b->count == 1) {
            buf = bufs[b->first].buf;
        } else {
            b->packed = malloc((size_t)b->bytes);
            if (!b->packed)
                break;
            Py_ssize_t off = 0;
            for (int i = b->first; i < b->first + b->count; i++) {
                memcpy(b->packed + off, bufs[i].buf, (size_t)bufs[i].len);
                off += bufs[i].len;
            }
            buf = b->packed;
        }
        rc = MPI_LOCKED(MPI_Iallreduce(MPI_IN_PLACE, buf, elems, t, op,
                                       MPI_COMM_WORLD, &reqs[started]));
        if (rc != MPI_SUCCESS)
            break;
        /* Lets the transport progress the earlier buckets meanwhile. */
        int flag;
        MPI_LOCKED(MPI_Testall(0, reqs, &flag, MPI_STATUSES_IGNORE));
    }
    Py_END_ALLOW_THREADS
    if (rc != MPI_SUCCESS) {
        mpi_error("MPI_Iallreduce", rc);
    } else if (started < nb) {
        g_broken = 1;
        snprintf(g_broken_why, sizeof g_broken_why, "out of memory");
        PyErr_NoMemory();
    } else {
        unpack_arg ua = {bufs, buckets};
        ok = wait_all("all-reduce", reqs, nb, timeout, unpack_bucket,
                      &ua) == 0;
    }
    /* After a failure the pending requests may still write into the
     * packed buffers: leak them rather than free memory MPI owns. */
    if (ok)
        for (int i = 0; i < nb; i++)
            free(buckets[i].packed);
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    free(bufs);
    free(types);
    free(buckets);
    free(reqs);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* Note [Started all-reduces]: iallreduce(arrays, op) packs arrays (one
 * dtype) into one buffer, starts its MPI_Iallreduce and returns at once a
 * Pending, so that the backward pass can go on while it travels
 * (tfmini/distribute/overlap.py). Open MPI moves a non-blocking collective
 * on only inside MPI calls: Note [Progress thread] makes them while it is
 * in flight, and the caller polls test() between backward steps too;
 * wait(pendings, timeout) finishes them with the deadline of Note
 * [Collectives with a deadline]. A Pending holds its arrays' buffers until
 * the result is unpacked into them; one dropped while MPI still owns its
 * memory leaks it rather than let MPI write into freed memory. */
typedef struct {
    PyObject_HEAD
    int n;
    Py_buffer *bufs;
    char *packed;              /* NULL: one array reduced in place */
    MPI_Request req;
    int state;   /* 0 in flight, 1 done, -1 never started, -2 failed in
                  * flight (MPI may still write: its memory is leaked) */
} Pending;

static void pending_finish(Pending *p)
{
    inflight_add(-1);
    if (p->packed) {
        Py_ssize_t off = 0;
        for (int i = 0; i < p->n; i++) {
            memcpy(p->bufs[i].buf, p->packed + off, (size_t)p->bufs[i].len);
            off += p->bufs[i].len;
        }
    }
    p->state = 1;
}

static void pending_release(Pending *p)
{
    for (int i = 0; i < p->n; i++)
        PyBuffer_Release(&p->bufs[i]);
    free(p->bufs);
    free(p->packed);
    p->bufs = NULL;
    p->packed = NULL;
    p->n = 0;
}

static void pending_dealloc(Pending *p)
{
    if (p->state == 0)
        inflight_add(-1);  /* never finished: its memory stays MPI's */
    if (p->state == 1 || p->state == -1)
        pending_release(p);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *pending_test(Pending *p, PyObject *unused)
{
    if (p->state == 0) {
        int flag = 0;
        if (check_ready("all-reduce") < 0)
            return NULL;
        int rc = MPI_LOCKED(MPI_Test(&p->req, &flag, MPI_STATUS_IGNORE));
        if (rc != MPI_SUCCESS) {
            p->state = -2;
            inflight_add(-1);
            return mpi_error("MPI_Test", rc);
        }
        if (!flag)
            Py_RETURN_FALSE;
        pending_finish(p);
        pending_release(p);
    }
    if (p->state < 0) {
        PyErr_SetString(PyExc_ConnectionError,
                        "all-reduce: this bucket's collective failed");
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef pending_methods[] = {
    {"test", (PyCFunction)pending_test, METH_NOARGS,
     "Progress the all-reduce; True once its result is in the arrays."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject PendingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tfmini.distribute._mpi.Pending",
    .tp_basicsize = sizeof(Pending),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A started all-reduce (iallreduce).",
    .tp_dealloc = (destructor)pending_dealloc,
    .tp_methods = pending_methods,
};

/* iallreduce(arrays, op) -> Pending (Note [Started all-reduces]). */
static PyObject *py_iallreduce(PyObject *self, PyObject *args)
{
    PyObject *list;
    const char *opname;
    MPI_Op op;
    MPI_Datatype t0 = MPI_DATATYPE_NULL;
    if (!PyArg_ParseTuple(args, "O!s", &PyList_Type, &list, &opname))
        return NULL;
    if (check_ready("all-reduce") < 0)
        return NULL;
    if (mpi_op(opname, &op) < 0) {
        PyErr_Format(PyExc_ValueError, "all-reduce: unknown op '%s'",
                     opname);
        return NULL;
    }
    int n = (int)PyList_GET_SIZE(list);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "iallreduce: no arrays");
        return NULL;
    }
    Pending *p = PyObject_New(Pending, &PendingType);
    if (!p)
        return NULL;
    p->n = 0;
    p->packed = NULL;
    p->state = -1;
    p->bufs = calloc((size_t)n, sizeof(Py_buffer));
    if (!p->bufs) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    Py_ssize_t bytes = 0, itemsize = 1;
    for (; p->n < n; p->n++) {
        Py_buffer *b = &p->bufs[p->n];
        MPI_Datatype t;
        if (PyObject_GetBuffer(PyList_GET_ITEM(list, p->n), b,
                               PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS |
                               PyBUF_FORMAT) < 0) {
            Py_DECREF(p);
            return NULL;
        }
        if (mpi_type(b, &t) < 0 || (p->n && t != t0)) {
            PyErr_Format(PyExc_TypeError, "iallreduce: array %d has format "
                         "'%s'; float32, float64, int32 or int64 expected, "
                         "one dtype per call", p->n, b->format);
            p->n++;
            Py_DECREF(p);
            return NULL;
        }
        t0 = t;
        itemsize = b->itemsize;
        bytes += b->len;
    }
    if (bytes / itemsize > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "iallreduce: more than 2**31 "
                        "elements");
        Py_DECREF(p);
        return NULL;
    }
    void *buf = p->bufs[0].buf;
    if (n > 1) {
        p->packed = malloc((size_t)(bytes ? bytes : 1));
        if (!p->packed) {
            Py_DECREF(p);
            return PyErr_NoMemory();
        }
        Py_ssize_t off = 0;
        for (int i = 0; i < n; i++) {
            memcpy(p->packed + off, p->bufs[i].buf, (size_t)p->bufs[i].len);
            off += p->bufs[i].len;
        }
        buf = p->packed;
    }
    int rc = MPI_LOCKED(MPI_Iallreduce(MPI_IN_PLACE, buf,
                                       (int)(bytes / itemsize), t0, op,
                                       MPI_COMM_WORLD, &p->req));
    if (rc != MPI_SUCCESS) {
        Py_DECREF(p);
        return mpi_error("MPI_Iallreduce", rc);
    }
    p->state = 0;
    inflight_add(+1);
    int flag;     /* a first push, while the caller computes */
    MPI_LOCKED(MPI_Test(&p->req, &flag, MPI_STATUS_IGNORE));
    if (flag) {
        pending_finish(p);
        pending_release(p);
    }
    return (PyObject *)p;
}

typedef struct {
    Pending **ps;
} wait_arg;

static void finish_pending(int index, void *a)
{
    pending_finish(((wait_arg *)a)->ps[index]);
}

/* wait(pendings, timeout): every Pending's result in its arrays. */
static PyObject *py_wait(PyObject *self, PyObject *args)
{
    PyObject *list;
    double timeout;
    if (!PyArg_ParseTuple(args, "O!d", &PyList_Type, &list, &timeout))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    Pending **ps = calloc((size_t)(n ? n : 1), sizeof *ps);
    MPI_Request *reqs = calloc((size_t)(n ? n : 1), sizeof *reqs);
    int m = 0, ok = 0;
    if (!ps || !reqs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(list, i);
        if (!PyObject_TypeCheck(o, &PendingType)) {
            PyErr_SetString(PyExc_TypeError, "wait: a list of Pending "
                            "(from iallreduce) expected");
            goto done;
        }
        Pending *p = (Pending *)o;
        if (p->state < 0) {
            PyErr_SetString(PyExc_ConnectionError, "all-reduce: a bucket's "
                            "collective failed");
            goto done;
        }
        if (p->state == 0) {
            ps[m] = p;
            reqs[m++] = p->req;
        }
    }
    if (m && check_ready("all-reduce") < 0)
        goto done;
    wait_arg wa = {ps};
    if (wait_all("all-reduce", reqs, m, timeout, finish_pending, &wa) < 0) {
        for (int i = 0; i < m; i++)
            if (ps[i]->state == 0) {
                ps[i]->state = -2;
                inflight_add(-1);
            }
        goto done;
    }
    for (int i = 0; i < m; i++)
        pending_release(ps[i]);
    ok = 1;
done:
    free(ps);
    free(reqs);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* bcast(arrays, root, timeout): root's arrays copied into every
 * worker's, in place. */
static PyObject *py_bcast(PyObject *self, PyObject *args)
{
    PyObject *list;
    int root;
    double timeout;
    if (!PyArg_ParseTuple(args, "O!id", &PyList_Type, &list, &root,
                          &timeout))
        return NULL;
    if (check_ready("broadcast") < 0)
        return NULL;
    if (root < 0 || root >= g_size) {
        PyErr_Format(PyExc_ValueError, "broadcast: root %d is not a worker "
                     "(there are %d)", root, g_size);
        return NULL;
    }
    int n = (int)PyList_GET_SIZE(list), got = 0, ok = 0, rc = MPI_SUCCESS;
    Py_buffer *bufs = calloc((size_t)(n ? n : 1), sizeof(Py_buffer));
    MPI_Request *reqs = calloc((size_t)(n ? n : 1), sizeof(MPI_Request));
    if (!bufs || !reqs) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(list, got), &bufs[got],
                               PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = MPI_LOCKED(MPI_Ibcast(bufs[i].buf, (int)bufs[i].len, MPI_BYTE,
                                   root, MPI_COMM_WORLD, &reqs[i]));
    if (rc != MPI_SUCCESS)
        mpi_error("MPI_Ibcast", rc);
    else
        ok = wait_all("broadcast", reqs, n, timeout, NULL, NULL) == 0;
done:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    free(bufs);
    free(reqs);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_barrier(PyObject *self, PyObject *args)
{
    double timeout;
    MPI_Request req;
    if (!PyArg_ParseTuple(args, "d", &timeout))
        return NULL;
    if (check_ready("barrier") < 0)
        return NULL;
    int rc = MPI_LOCKED(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    if (rc != MPI_SUCCESS)
        return mpi_error("MPI_Ibarrier", rc);
    if (wait_all("barrier", &req, 1, timeout, NULL, NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_finalize(PyObject *self, PyObject *args)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (g_we_inited && !fin && !g_broken) {
        progress_stop();
        MPI_Finalize();
    }
    Py_RETURN_NONE;
}

static PyObject *py_abort(PyObject *self, PyObject *args)
{
    int code;
    if (!PyArg_ParseTuple(args, "i", &code))
        return NULL;
    MPI_Abort(MPI_COMM_WORLD, code);
    Py_RETURN_NONE;
}

static PyObject *py_broken(PyObject *self, PyObject *args)
{
    return PyBool_FromLong(g_broken);
}

static PyObject *py_library_version(PyObject *self, PyObject *args)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    return PyUnicode_FromStringAndSize(v, len);
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_NOARGS, "MPI_Init_thread; (rank, size)."},
    {"allreduce", py_allreduce, METH_VARARGS,
     "allreduce(arrays, op, bucket_bytes, timeout): in place, bucketed."},
    {"iallreduce", py_iallreduce, METH_VARARGS,
     "iallreduce(arrays, op) -> Pending: started, not waited for."},
    {"wait", py_wait, METH_VARARGS,
     "wait(pendings, timeout): results unpacked into their arrays."},
    {"bcast", py_bcast, METH_VARARGS,
     "bcast(arrays, root, timeout): in place."},
    {"barrier", py_barrier, METH_VARARGS, "barrier(timeout)."},
    {"finalize", py_finalize, METH_NOARGS,
     "MPI_Finalize, unless a collective failed."},
    {"abort", py_abort, METH_VARARGS, "MPI_Abort(MPI_COMM_WORLD, code)."},
    {"broken", py_broken, METH_NOARGS, "Whether a collective failed."},
    {"library_version", py_library_version, METH_NOARGS,
     "MPI_Get_library_version."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mpi",
                                    "MPI collectives for tf.distribute", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__mpi(void)
{
    if (PyType_Ready(&PendingType) < 0)
        return NULL;
    return PyModule_Create(&module);
}

/* floor.c: a minimal workq 0.2.0 server for what the load clients send (add -> lease -> complete), as a floor for
 * `wqtool serve`'s throughput: how fast can *any* server of wqtool's shape (one loop thread, group commit per loop
 * iteration) go on this machine, beside other sessions' work?  A measurement, not a product (bench/floor/README.md).
 *
 * Built two ways (Makefile): `floor` (a standalone process: variants C1 and, with -threads 2, C4) and `_floor*.so`
 * (a CPython extension: the same loop in a thread of a Python process that released the GIL, C2; with a Python
 * callback per request under the GIL, C3).
 *
 * What it does: epoll (level-triggered), one read per readable connection per iteration, upstream's framing
 * (int/prot/prot.go ParseCmd: a line ended by \r\n, space-separated tokens, `-k=v` flags, a body of the size
 * token followed by \r\n), the three commands with upstream's replies (workq-protocol.md 5.1, 5.4, 5.5), an
 * in-memory hash of jobs and a FIFO per queue, and the command log's records as workq-server writes them
 * (workq-cmdlog.md 3-4: Go binary time, uvarint size, payload, CRC-32C big-endian) — the same bytes per request
 * as wqtool's and workq-server's.  The records of one loop iteration are written with one write(2) (interval) and
 * fdatasync'ed (always) before that iteration's replies leave, as wqtool's group commit (server.py _commit).
 * Left out (the load never needs them): TTL/TTR timers, waiting leases (an empty queue answers -TIMEOUT at once),
 * priorities in the FIFO, segment roll-over, the once-a-second fsync of `interval`.  Every other request gets
 * -CLIENT-ERROR Unknown command and is counted: the bench checks that count is 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef FLOOR_PYEXT
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

/* ------------------------------------------------------------------ buffers */
typedef struct { char *p; size_t len, cap; } buf_t;

static void buf_need(buf_t *b, size_t more) {
    if (b->len + more <= b->cap) return;
    size_t c = b->cap ? b->cap : 4096;
    while (c < b->len + more) c *= 2;
    b->p = realloc(b->p, c);
    if (!b->p) { perror("floor: realloc"); exit(1); }
    b->cap = c;
}
static void buf_add(buf_t *b, const void *s, size_t n) { buf_need(b, n); memcpy(b->p + b->len, s, n); b->len += n; }

/* ------------------------------------------------------------------ CRC-32C, Go time, varints */
static uint32_t crc_tab[256];
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_tab[i] = c;
    }
}
static uint32_t crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = crc_tab[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}
static size_t uvarint(uint8_t *o, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) { o[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    o[n++] = (uint8_t)v;
    return n;
}
static void gotime(uint8_t *o, const struct timespec *ts) {   /* 15 bytes, workq-cmdlog.md 3.1 */
    uint64_t sec = (uint64_t)ts->tv_sec + 62135596800ull;
    uint32_t ns = (uint32_t)ts->tv_nsec;
    o[0] = 1;
    for (int i = 0; i < 8; i++) o[1 + i] = (uint8_t)(sec >> (56 - 8 * i));
    for (int i = 0; i < 4; i++) o[9 + i] = (uint8_t)(ns >> (24 - 8 * i));
    o[13] = 0xFF; o[14] = 0xFF;
}
static const uint8_t ZERO_TIME[15] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

/* one record: TIME | uvarint(len) | payload | CRC-32C BE, appended to `log` */
static void record(buf_t *log, const struct timespec *now, const uint8_t *pl, size_t n) {
    buf_need(log, 15 + 10 + n + 4);
    uint8_t *o = (uint8_t *)log->p + log->len, *s = o;
    gotime(o, now); o += 15;
    o += uvarint(o, n);
    memcpy(o, pl, n); o += n;
    uint32_t c = crc32c(s, (size_t)(o - s));
    o[0] = (uint8_t)(c >> 24); o[1] = (uint8_t)(c >> 16); o[2] = (uint8_t)(c >> 8); o[3] = (uint8_t)c;
    log->len += (size_t)(o + 4 - s);
}

/* ------------------------------------------------------------------ jobs and queues */
typedef struct queue queue;
typedef struct job {
    uint8_t id[16];
    char txt[36];
    queue *q;
    uint32_t ttr, blen, rlen;
    uint64_t ttl;
    int state, attempts;           /* 0 NEW, 1 COMPLETED, 2 FAILED, 4 LEASED */
    char *body, *res;
    struct job *hnext, *qnext;
} job;
struct queue { char name[256]; size_t nlen; job *head, *tail; queue *hnext; };

static job **jtab; static size_t jcap, njobs;
static queue **qtab; static size_t qcap;

static uint64_t id_hash(const uint8_t *id) {
    uint64_t a, b;
    memcpy(&a, id, 8); memcpy(&b, id + 8, 8);
    return (a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
}
static job *job_get(const uint8_t *id) {
    for (job *j = jtab[id_hash(id) & (jcap - 1)]; j; j = j->hnext)
        if (!memcmp(j->id, id, 16)) return j;
    return NULL;
}
static void job_put(job *j) {
    if (njobs + 1 > jcap) {
        size_t nc = jcap * 2;
        job **nt = calloc(nc, sizeof *nt);
        for (size_t i = 0; i < jcap; i++)
            for (job *x = jtab[i], *nx; x; x = nx) {
                nx = x->hnext;
                size_t h = id_hash(x->id) & (nc - 1);
                x->hnext = nt[h]; nt[h] = x;
            }
        free(jtab); jtab = nt; jcap = nc;
    }
    size_t h = id_hash(j->id) & (jcap - 1);
    j->hnext = jtab[h]; jtab[h] = j; njobs++;
}
static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    while (n--) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}
static queue *queue_get(const char *name, size_t n, int make) {
    size_t h = name_hash(name, n) & (qcap - 1);
    for (queue *q = qtab[h]; q; q = q->hnext)
        if (q->nlen == n && !memcmp(q->name, name, n)) return q;
    if (!make) return NULL;
    queue *q = calloc(1, sizeof *q);
    memcpy(q->name, name, n); q->nlen = n;
    q->hnext = qtab[h]; qtab[h] = q;
    return q;
}

/* ------------------------------------------------------------------ parsing helpers */
static int hexv(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}
/* satori/go.uuid UnmarshalText (32 hex digits, optional '-' before groups) + v4/RFC 4122 check */
static int parse_id(const char *s, size_t n, uint8_t *id) {
    static const int groups[5] = {4, 2, 2, 2, 6};
    size_t i = 0;
    int k = 0;
    if (n >= 9 && !memcmp(s, "urn:uuid:", 9)) i = 9;
    else if (n && s[0] == '{') i = 1;
    for (int g = 0; g < 5; g++) {
        if (g && i < n && s[i] == '-') i++;
        for (int b = 0; b < groups[g]; b++) {
            if (i + 2 > n) return -1;
            int h = hexv(s[i]), l = hexv(s[i + 1]);
            if (h < 0 || l < 0) return -1;
            id[k++] = (uint8_t)(h << 4 | l);
            i += 2;
        }
    }
    if ((id[6] >> 4) != 4 || (id[8] & 0xC0) != 0x80) return -1;
    return 0;
}
static void id_text(const uint8_t *id, char *o) {
    static const char hx[] = "0123456789abcdef";
    int k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) o[k++] = '-';
        o[k++] = hx[id[i] >> 4]; o[k++] = hx[id[i] & 15];
    }
}
static int parse_u(const char *s, size_t n, uint64_t max, uint64_t *v) {
    if (!n || n > 19) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    if (x > max) return -1;
    *v = x;
    return 0;
}
static int name_ok(const char *s, size_t n) {
    if (!n || n > 255) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ connections and the server */
typedef struct conn {
    int fd, id, dirty, want_out, dead;
    buf_t in, out;
    size_t pos;
    struct conn *next_dirty;
} conn;

enum { PY_NONE = 0, PY_REPLY = 1, PY_HANDLER = 2 };
static struct {
    int lfd, ep, logfd, always, threads, pymode;
    unsigned long requests, errors;
    buf_t log;
    conn *dirty;
    struct timespec now;
    volatile sig_atomic_t stop;
#ifdef FLOOR_PYEXT
    PyObject *cb;
#endif
} S;

static void reply(conn *c, const char *s, size_t n) { buf_add(&c->out, s, n); }
#define REPLY(c, lit) reply(c, lit, sizeof(lit) - 1)

static void client_error(conn *c, const char *what) {
    S.errors++;
    buf_add(&c->out, "-CLIENT-ERROR ", 14);
    buf_add(&c->out, what, strlen(what));
    buf_add(&c->out, "\r\n", 2);
}

/* tokens of a line: at most 16 (upstream's counts never need more for these commands) */
typedef struct { const char *s; size_t n; } tok;

static void do_add(conn *c, tok *t, int nt, const char *body, size_t blen) {
    uint8_t id[16];
    uint64_t ttr, ttl;
    if (nt != 6) { client_error(c, "Invalid command args"); return; }
    if (parse_id(t[1].s, t[1].n, id)) { client_error(c, "Invalid ID"); return; }
    if (!name_ok(t[2].s, t[2].n)) { client_error(c, "Invalid Name"); return; }
    if (parse_u(t[3].s, t[3].n, 86400000, &ttr) || !ttr) { client_error(c, "Invalid TTR"); return; }
    if (parse_u(t[4].s, t[4].n, 2592000000ull, &ttl) || !ttl) { client_error(c, "Invalid TTL"); return; }
    if (job_get(id)) { client_error(c, "Duplicate job"); return; }
    job *j = calloc(1, sizeof *j);
    memcpy(j->id, id, 16); id_text(id, j->txt);
    j->q = queue_get(t[2].s, t[2].n, 1);
    j->ttr = (uint32_t)ttr; j->ttl = ttl;
    j->body = malloc(blen ? blen : 1); memcpy(j->body, body, blen); j->blen = (uint32_t)blen;
    job_put(j);
    if (j->q->tail) j->q->tail->qnext = j; else j->q->head = j;
    j->q->tail = j;
    /* the add record (workq-cmdlog.md 4.1): no flags here, so priority, max-attempts and max-fails are 0 */
    uint8_t stackbuf[1024], *pl = blen + 320 <= sizeof stackbuf ? stackbuf : malloc(blen + 320), *o = pl;
    *o++ = 1; memcpy(o, id, 16); o += 16;
    o += uvarint(o, t[2].n); memcpy(o, t[2].s, t[2].n); o += t[2].n;
    o += uvarint(o, ttr); o += uvarint(o, ttl);
    *o++ = 0; *o++ = 0; *o++ = 0;
    o += uvarint(o, blen); memcpy(o, body, blen); o += blen;
    memcpy(o, ZERO_TIME, 15); o += 15;
    gotime(o, &S.now); o += 15;
    record(&S.log, &S.now, pl, (size_t)(o - pl));
    if (pl != stackbuf) free(pl);
    REPLY(c, "+OK\r\n");
}

static void do_lease(conn *c, tok *t, int nt) {
    uint64_t wait;
    if (nt < 3) { client_error(c, "Invalid command args"); return; }
    for (int i = 1; i < nt - 1; i++)
        if (!name_ok(t[i].s, t[i].n)) { client_error(c, "Invalid Name"); return; }
    if (parse_u(t[nt - 1].s, t[nt - 1].n, 86400000, &wait)) { client_error(c, "Invalid wait timeout"); return; }
    for (int i = 1; i < nt - 1; i++) {
        queue *q = queue_get(t[i].s, t[i].n, 1);
        job *j;
        while ((j = q->head) != NULL) {         /* lazily drop jobs completed while ready */
            q->head = j->qnext;
            if (!q->head) q->tail = NULL;
            j->qnext = NULL;
            if (j->state == 0) break;
        }
        if (!j) continue;
        j->state = 4; j->attempts++;
        uint8_t pl[17];
        pl[0] = 7; memcpy(pl + 1, j->id, 16);
        record(&S.log, &S.now, pl, 17);
        char head[400];
        int n = snprintf(head, sizeof head, "+OK 1\r\n%.36s %.*s %u %u\r\n", j->txt, (int)q->nlen, q->name, j->ttr,
                         j->blen);
        buf_add(&c->out, head, (size_t)n);
        buf_add(&c->out, j->body, j->blen);
        buf_add(&c->out, "\r\n", 2);
        return;
    }
    REPLY(c, "-TIMEOUT\r\n");
}

static void do_complete(conn *c, tok *t, int nt, const char *body, size_t blen, int fail) {
    uint8_t id[16];
    if (nt != 3) { client_error(c, "Invalid command args"); return; }
    if (parse_id(t[1].s, t[1].n, id)) { client_error(c, "Invalid ID"); return; }
    job *j = job_get(id);
    if (!j) { REPLY(c, "-NOT-FOUND\r\n"); return; }
    if (j->state == 1 || j->state == 2) { client_error(c, "Duplicate result"); return; }
    j->state = fail ? 2 : 1;
    free(j->body); j->body = NULL;
    j->res = malloc(blen ? blen : 1); memcpy(j->res, body, blen); j->rlen = (uint32_t)blen;
    uint8_t stackbuf[512], *pl = blen + 32 <= sizeof stackbuf ? stackbuf : malloc(blen + 32), *o = pl;
    *o++ = fail ? 4 : 3; memcpy(o, id, 16); o += 16;
    o += uvarint(o, blen); memcpy(o, body, blen); o += blen;
    record(&S.log, &S.now, pl, (size_t)(o - pl));
    if (pl != stackbuf) free(pl);
    REPLY(c, "+OK\r\n");
}

#ifdef FLOOR_PYEXT
/* PY_REPLY: the reply C made goes through cb(reply) -> bytes under the GIL; PY_HANDLER: cb(conn_id, request)
 * -> bytes is the whole handler (C framed the request; the state and the log are the callback's) */
static void py_call(conn *c, size_t rstart, const char *req, size_t rlen) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r;
    if (S.pymode == PY_REPLY) {
        r = PyObject_CallFunction(S.cb, "y#", c->out.p + rstart, (Py_ssize_t)(c->out.len - rstart));
        c->out.len = rstart;
    } else {
        r = PyObject_CallFunction(S.cb, "iy#", c->id, req, (Py_ssize_t)rlen);
    }
    if (r && PyBytes_Check(r)) {
        buf_add(&c->out, PyBytes_AS_STRING(r), (size_t)PyBytes_GET_SIZE(r));
    } else {
        if (!r) PyErr_Print();
        S.errors++;
        REPLY(c, "-SERVER-ERROR callback\r\n");
    }
    Py_XDECREF(r);
    PyGILState_Release(g);
}
#endif

/* frame and handle every complete request in c->in; returns -1 to close the connection */
static int handle(conn *c) {
    for (;;) {
        char *base = c->in.p + c->pos;
        size_t avail = c->in.len - c->pos;
        char *nl = memchr(base, '\n', avail);
        if (!nl) return avail > 10000 ? -1 : 0;
        size_t llen = (size_t)(nl - base) + 1;
        if (llen < 2 || nl[-1] != '\r') return -1;
        tok t[16];
        int nt = 0;
        const char *s = base, *e = nl - 1;
        while (s < e && nt < 16) {
            const char *sp = memchr(s, ' ', (size_t)(e - s));
            if (!sp) sp = e;
            if (sp > s) { t[nt].s = s; t[nt].n = (size_t)(sp - s); nt++; }
            s = sp + 1;
        }
        int cmd = 0;                 /* 1 add, 2 lease, 3 complete, 4 fail */
        if (nt && t[0].s == base) {
            if (t[0].n == 3 && !memcmp(t[0].s, "add", 3)) cmd = 1;
            else if (t[0].n == 5 && !memcmp(t[0].s, "lease", 5)) cmd = 2;
            else if (t[0].n == 8 && !memcmp(t[0].s, "complete", 8)) cmd = 3;
            else if (t[0].n == 4 && !memcmp(t[0].s, "fail", 4)) cmd = 4;
        }
        const char *body = NULL;
        size_t blen = 0, total = llen;
        if ((cmd == 1 && nt == 6) || ((cmd == 3 || cmd == 4) && nt == 3)) {
            uint64_t v;
            if (parse_u(t[nt - 1].s, t[nt - 1].n, 1048576, &v)) {
                c->pos += llen;
                client_error(c, cmd == 4 ? "Invalid result size" : "Invalid payload size");
                S.requests++;
                continue;
            }
            if (avail < llen + v + 2) return 0;      /* the body is not all here yet */
            body = base + llen; blen = (size_t)v;
            if (body[blen] != '\r' || body[blen + 1] != '\n') return -1;
            total = llen + blen + 2;
        }
        c->pos += total;
        S.requests++;
        size_t rstart = c->out.len;
#ifdef FLOOR_PYEXT
        if (S.pymode == PY_HANDLER) { py_call(c, rstart, base, total); continue; }
#endif
        switch (cmd) {
        case 1: do_add(c, t, nt, body, blen); break;
        case 2: do_lease(c, t, nt); break;
        case 3: do_complete(c, t, nt, body, blen, 0); break;
        case 4: do_complete(c, t, nt, body, blen, 1); break;
        default: client_error(c, "Unknown command");
        }
#ifdef FLOOR_PYEXT
        if (S.pymode == PY_REPLY) py_call(c, rstart, NULL, 0);
#endif
        (void)rstart;
    }
}

static void conn_close(conn *c) {
    epoll_ctl(S.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->dead = 1;       /* freed when no batch refers to it (never, here: a bench runs a few dozen connections) */
}

/* send what is queued on c; EAGAIN -> wait for EPOLLOUT */
static void conn_flush(conn *c) {
    while (c->out.len) {
        ssize_t w = write(c->fd, c->out.p, c->out.len);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                if (!c->want_out) {
                    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
                    epoll_ctl(S.ep, EPOLL_CTL_MOD, c->fd, &ev);
                    c->want_out = 1;
                }
                return;
            }
            c->out.len = 0;
            return;
        }
        memmove(c->out.p, c->out.p + w, c->out.len - (size_t)w);
        c->out.len -= (size_t)w;
    }
    if (c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(S.ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = 0;
    }
}

static void log_write(const char *p, size_t n) {
    while (n) {
        ssize_t w = write(S.logfd, p, n);
        if (w < 0) { if (errno == EINTR) continue; perror("floor: log write"); exit(1); }
        p += w; n -= (size_t)w;
    }
}

/* ------------------------------------------------------------------ -fsync-spin US: wqtool's fsync spinner */
/* As _proto.c spin_start/spin_stop (spin.py): a thread that loops on sched_yield() while the loop waits in
 * fdatasync, at most US microseconds, so the thread the fsync returns to finds a CPU of the server's group awake. */
#include <sched.h>
static pthread_mutex_t sp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sp_cv = PTHREAD_COND_INITIALIZER;
static unsigned long sp_gen, sp_active;
static int64_t sp_end, sp_limit_ns;
static int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static void *spin_main(void *arg) {
    (void)arg;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&sp_mu);
        while (sp_gen == seen) pthread_cond_wait(&sp_cv, &sp_mu);
        seen = sp_gen;
        int64_t end = sp_end;
        pthread_mutex_unlock(&sp_mu);
        while (__atomic_load_n(&sp_active, __ATOMIC_ACQUIRE) == seen && mono_ns() < end) sched_yield();
    }
    return NULL;
}
static void log_sync(void) {
    if (!sp_limit_ns) { fdatasync(S.logfd); return; }
    pthread_mutex_lock(&sp_mu);
    unsigned long g = ++sp_gen;
    sp_end = mono_ns() + sp_limit_ns;
    __atomic_store_n(&sp_active, g, __ATOMIC_RELEASE);
    pthread_cond_signal(&sp_cv);
    pthread_mutex_unlock(&sp_mu);
    fdatasync(S.logfd);
    __atomic_store_n(&sp_active, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------ C4: a second thread for the commit */
/* The loop thread reads, frames and handles; the commit thread writes the iteration's records (and fdatasyncs
 * them under always) and sends its replies.  Hand-over: one batch (records + (fd, reply) pairs) under a mutex, the
 * commit thread woken by a condition variable only when it waits. */
typedef struct { buf_t log, replies; } batch_t;   /* replies: [int fd][uint32 n][n bytes]... */
static batch_t B[2];
static int b_cur, b_full, w_waiting;
static pthread_mutex_t b_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t b_cv = PTHREAD_COND_INITIALIZER;

static void *commit_thread(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&b_mu);
        while (!b_full) { w_waiting = 1; pthread_cond_wait(&b_cv, &b_mu); w_waiting = 0; }
        batch_t *b = &B[b_cur];
        b_cur ^= 1;              /* the loop fills the other one meanwhile */
        b_full = 0;
        pthread_mutex_unlock(&b_mu);
        if (b->log.len) {
            log_write(b->log.p, b->log.len);
            if (S.always) log_sync();
        }
        for (size_t o = 0; o < b->replies.len;) {
            int fd; uint32_t n;
            memcpy(&fd, b->replies.p + o, 4); memcpy(&n, b->replies.p + o + 4, 4); o += 8;
            const char *p = b->replies.p + o;
            size_t left = n;
            while (left) {          /* the load client always reads: a blocking-style retry is enough here */
                ssize_t w = write(fd, p, left);
                if (w < 0) { if (errno == EINTR || errno == EAGAIN) continue; break; }
                p += w; left -= (size_t)w;
            }
            o += n;
        }
        b->log.len = b->replies.len = 0;
    }
    return NULL;
}

static void commit(void) {
    if (S.threads >= 2) {
        pthread_mutex_lock(&b_mu);
        batch_t *b = &B[b_cur];
        buf_add(&b->log, S.log.p, S.log.len);
        for (conn *c = S.dirty; c; c = c->next_dirty) {
            c->dirty = 0;
            if (c->dead || !c->out.len) { c->out.len = 0; continue; }
            uint32_t n = (uint32_t)c->out.len;
            buf_add(&b->replies, &c->fd, 4); buf_add(&b->replies, &n, 4); buf_add(&b->replies, c->out.p, n);
            c->out.len = 0;
        }
        b_full = 1;
        if (w_waiting) pthread_cond_signal(&b_cv);
        pthread_mutex_unlock(&b_mu);
    } else {
        if (S.log.len) {
            log_write(S.log.p, S.log.len);
            if (S.always) log_sync();
        }
        for (conn *c = S.dirty; c; c = c->next_dirty) {
            c->dirty = 0;
            if (!c->dead) conn_flush(c);
        }
    }
    S.log.len = 0;
    S.dirty = NULL;
}

/* ------------------------------------------------------------------ the loop */
static int nconns;
static void loop(void) {
    struct epoll_event evs[64];
    while (!S.stop) {
        int n = epoll_wait(S.ep, evs, 64, -1);
        if (n < 0) { if (errno == EINTR) continue; perror("floor: epoll_wait"); return; }
        clock_gettime(CLOCK_REALTIME, &S.now);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {            /* the listening socket */
                for (;;) {
                    int fd = accept4(S.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd; nc->id = nconns++;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(S.ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            if (c->dead) continue;
            if (evs[i].events & EPOLLOUT) conn_flush(c);
            if (!(evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
            if (c->pos && c->pos == c->in.len) c->pos = c->in.len = 0;
            buf_need(&c->in, 65536);
            ssize_t r = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                conn_close(c);
                continue;
            }
            c->in.len += (size_t)r;
            int rc = handle(c);
            if (c->pos) {        /* keep the unparsed tail at the start */
                memmove(c->in.p, c->in.p + c->pos, c->in.len - c->pos);
                c->in.len -= c->pos; c->pos = 0;
            }
            if (c->out.len && !c->dirty) { c->dirty = 1; c->next_dirty = S.dirty; S.dirty = c; }
            if (rc < 0) { commit(); conn_close(c); }
        }
        if (S.dirty || S.log.len) commit();
    }
}

/* ------------------------------------------------------------------ start-up: workq-server's flags */
static void on_term(int sig) { (void)sig; S.stop = 1; }

static int floor_run(int argc, char **argv) {
    const char *listen_at = "127.0.0.1:9922", *dir = NULL;
    S.threads = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-listen") && v) { listen_at = v; i++; }
        else if (!strcmp(a, "-cmdlog-path") && v) { dir = v; i++; }
        else if (!strcmp(a, "-cmdlog-sync") && v) { S.always = !strcmp(v, "always"); i++; }
        else if (!strcmp(a, "-threads") && v) { S.threads = atoi(v); i++; }
        else if (!strcmp(a, "-fsync-spin") && v) { sp_limit_ns = atoll(v) * 1000; i++; }
        else if ((!strcmp(a, "-cmdlog-sync-int") || !strcmp(a, "-cmdlog-seg-size") ||
                  !strcmp(a, "-cmdlog-clean-int") || !strcmp(a, "--log-level")) && v) { i++; }
        else { fprintf(stderr, "floor: unknown argument %s\n", a); return 2; }
    }
    crc_init();
    jcap = 1 << 16; jtab = calloc(jcap, sizeof *jtab);
    qcap = 1 << 10; qtab = calloc(qcap, sizeof *qtab);
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/000000001.log", dir);
        S.logfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (S.logfd < 0) { perror(path); return 1; }
        static const char hdr[8] = {'w', 'q', 'w', 'q', 0, 0, 0, 1};
        log_write(hdr, 8);
    } else {
        S.logfd = open("/dev/null", O_WRONLY);
    }
    char host[256];
    const char *colon = strrchr(listen_at, ':');
    if (!colon) { fprintf(stderr, "floor: -listen HOST:PORT\n"); return 2; }
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen_at), listen_at);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &sa.sin_addr);
    S.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(S.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(S.lfd, (struct sockaddr *)&sa, sizeof sa) || listen(S.lfd, 1024)) { perror("floor: listen"); return 1; }
    S.ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.lfd, &ev);
    if (sp_limit_ns) {
        pthread_t t;
        pthread_create(&t, NULL, spin_main, NULL);
    }
    if (S.threads >= 2) {
        pthread_t t;
        pthread_create(&t, NULL, commit_thread, NULL);
    }
    fprintf(stderr, "floor: listening on %s (threads %d, sync %s, fsync spin %lld us, py %d)\n", listen_at,
            S.threads, S.always ? "always" : "interval", (long long)(sp_limit_ns / 1000), S.pymode);
    loop();
    fprintf(stderr, "floor: %lu requests, %lu errors\n", S.requests, S.errors);
    return 0;
}

#ifndef FLOOR_PYEXT
int main(int argc, char **argv) {
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return floor_run(argc - 1, argv + 1);
}
#else
/* _floor.serve(args, cb=None, mode=0): the loop, with the GIL released (mode 1: cb(reply) -> bytes per request;
 * mode 2: cb(conn_id, request) -> bytes is the handler).  Returns when the process is told to stop. */
static PyObject *py_serve(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *list, *cb = Py_None;
    int mode = 0;
    if (!PyArg_ParseTuple(args, "O!|Oi", &PyList_Type, &list, &cb, &mode)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    char **argv = calloc((size_t)n + 1, sizeof *argv);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i));
        if (!s) { free(argv); return NULL; }
        argv[i] = strdup(s);
    }
    if (cb != Py_None) { Py_INCREF(cb); S.cb = cb; S.pymode = mode ? mode : PY_REPLY; }
    signal(SIGPIPE, SIG_IGN);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = floor_run((int)n, argv);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(rc);
}
static PyMethodDef methods[] = {{"serve", py_serve, METH_VARARGS, "serve(args, cb=None, mode=0)"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_floor", NULL, -1, methods, NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit__floor(void) { (void)on_term; return PyModule_Create(&mod); }
#endif

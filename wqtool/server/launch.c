/* wqtool-serve: workq-server's command line, served by `wqtool serve`, with the port bound before Python starts.
 *
 *     wqtool-serve -listen localhost:9944 -cmdlog-path /var/lib/workq     (any `wqtool serve` argument)
 *
 * A drop-in for the workq-server binary. It binds and listens on -listen at once (a millisecond of CPU after exec,
 * where the interpreter alone takes ~10 ms before `wqtool serve` can bind: ~80 ms on a machine at load 10), then
 * execs the `wqtool` script beside it as `wqtool serve ARGS...`. The socket goes along (its descriptor number in
 * WQTOOL_SERVE_LISTEN_FD, this process's start in WQTOOL_SERVE_T0, CLOCK_REALTIME ns); wqtool.server.prebind
 * adopts it where it would bind that address itself. A client that connects meanwhile is completed by the kernel
 * and answered once the server runs, as upstream's clients are while it replays a big log.
 *
 * Whether to bind is decided by prebind.decide's rules, byte for byte (tests/server/test_launch.py proves it on
 * random command lines): only the plain flags of `wqtool serve` (any other argument, help, another mode: nothing is
 * bound here and the CLI decides), a port 1-65535, a -cmdlog-path that can be listed (or missing, with --create).
 * Binding fails (the port is taken, the name does not resolve): nothing is bound, and the server reports it as
 * always. Nothing is ever printed here but the one line of a failed exec (exit 127). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BACKLOG 4096                        /* prebind.BACKLOG */

static const char *const DECLINED[] = {"h", "help", "fastjournal", "orth-admin", NULL};
static const char *const VALUED[] = {"listen", "cmdlog-path", "cmdlog-seg-size", "cmdlog-sync", "cmdlog-sync-int",
                                     "cmdlog-clean-int", "max-connections", "idle-timeout", "request-timeout",
                                     "metrics", "log-level", NULL};

static int among(const char *s, size_t n, const char *const *names)
{
    for (; *names; names++)
        if (strlen(*names) == n && memcmp(*names, s, n) == 0)
            return 1;
    return 0;
}

/* prebind._servable: a directory that can be listed, or a missing one with --create. */
static int servable(const char *path, int create)
{
    DIR *d = opendir(path);
    if (d) {
        closedir(d);
        return 1;
    }
    return errno == ENOENT && create;
}

/* prebind.decide: 1 with *host ("" = every address; brackets stripped) and *port when the port is to be bound. */
static int decide(int argc, char **argv, const char **host, size_t *hostlen, int *port)
{
    const char *listen = "127.0.0.1:9922", *path = "";
    int create = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0 || a[0] != '-' || strcmp(a, "-") == 0)
            break;
        const char *name = a;
        while (*name == '-')
            name++;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        if (among(name, n, DECLINED))
            return 0;
        if (strcmp(a, "--create") == 0 || strcmp(a, "--sync-rolled") == 0) {
            create |= strcmp(a, "--create") == 0;
            continue;
        }
        if (!among(name, n, VALUED))
            return 0;
        const char *value;
        if (eq)
            value = eq + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else
            return 0;
        if (n == 6 && memcmp(name, "listen", 6) == 0)
            listen = value;
        else if (n == 11 && memcmp(name, "cmdlog-path", 11) == 0)
            path = value;
    }
    const char *colon = strrchr(listen, ':');
    if (!colon || !colon[1])
        return 0;
    const char *p = colon + 1;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9')
            return 0;
    while (*p == '0')
        p++;
    if (strlen(p) > 5 || !*p || atoi(p) > 65535)
        return 0;
    *port = atoi(p);
    if (*path && !servable(path, create))
        return 0;
    const char *h = listen, *e = colon;
    while (h < e && (*h == '[' || *h == ']'))
        h++;
    while (e > h && (e[-1] == '[' || e[-1] == ']'))
        e--;
    *host = h;
    *hostlen = (size_t)(e - h);
    return 1;
}

/* socket, SO_REUSEADDR, bind, listen as prebind.early does (the host resolved by getaddrinfo, its first address, as
 * Python's bind resolves it); -1 when anything fails (the server then binds and reports it itself). */
static int bind_listen(const char *host, size_t hostlen, int port)
{
    char name[256];
    if (hostlen >= sizeof name)
        return -1;
    memcpy(name, host, hostlen);
    name[hostlen] = 0;
    for (size_t i = 0; i < hostlen; i++)
        if ((unsigned char)name[i] >= 0x80)
            return -1;                      /* (Python encodes it by IDNA first: its own bind decides) */
    int family = memchr(name, ':', hostlen) ? AF_INET6 : AF_INET;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = hostlen ? 0 : AI_PASSIVE;
    char service[8];
    snprintf(service, sizeof service, "%d", port);
    if (getaddrinfo(hostlen ? name : NULL, service, &hints, &res) != 0 || !res)
        return -1;
    int fd = socket(family, SOCK_STREAM, 0);          /* inherited by the exec below */
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0
        || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, BACKLOG) != 0) {
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

int main(int argc, char **argv)
{
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    const char *host;
    size_t hostlen;
    int port, fd = -1;
    int bind_now = decide(argc - 1, argv + 1, &host, &hostlen, &port);
    if (getenv("WQTOOL_SERVE_LAUNCH_DRY")) {      /* the decision only (tests/server/test_launch.py) */
        if (bind_now)
            printf("bind %.*s %d\n", (int)hostlen, host, port);
        else
            printf("none\n");
        return 0;
    }
    if (bind_now)
        fd = bind_listen(host, hostlen, port);
    char num[32];
    if (fd >= 0) {
        snprintf(num, sizeof num, "%d", fd);
        setenv("WQTOOL_SERVE_LISTEN_FD", num, 1);
        snprintf(num, sizeof num, "%lld", (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec);
        setenv("WQTOOL_SERVE_T0", num, 1);
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    char self[PATH_MAX], script[PATH_MAX + 8];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!args)
        return 127;
    args[0] = "wqtool";
    args[1] = "serve";
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    if (n > 0) {                            /* the wqtool script beside this one (a venv's bin/), else PATH's */
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(script, sizeof script, "%s/wqtool", self);
            args[0] = script;
            execv(script, args);
        }
    }
    args[0] = "wqtool";
    execvp("wqtool", args);
    fprintf(stderr, "wqtool-serve: cannot run wqtool serve: %s\n", strerror(errno));
    return 127;
}

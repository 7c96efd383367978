/*
 * The race rows' barrier for a memory tool that is a process (`lab memcheck
 * --exec`). Loaded with LD_PRELOAD into each racing session's process, it
 * stops the session at the first write of each request -- open for writing,
 * creat, fopen "w"/"a"/"+", rename, unlink, rmdir, remove, mkdir of a name
 * that does not exist yet, link, symlink, truncate under the sandbox, or a
 * file lock anywhere (flock, fcntl F_SETLK*, lockf) -- until memcheck
 * releases it. Memcheck waits until every session of the round has reached
 * its write point (or answered without writing), then releases them one at
 * a time in a seeded order, each once the one before it has answered. A
 * read-modify-write without a lock therefore always runs read, read, write,
 * write and loses an update; a tool that takes a lock first is stopped
 * before its lock, so it still runs one command at a time and keeps
 * everything. Nothing here depends on timing.
 *
 * The rendezvous is files in CTXLAB_BARRIER_DIR, written and read with raw
 * system calls (never through the functions this library replaces):
 *   round-S        memcheck: "R B", the round R session S's current request
 *                  belongs to, and the per-process bound B in milliseconds (a
 *                  session never waits longer than that, whatever memcheck
 *                  does; it then goes on and says so on stderr)
 *   arrived-S-R    this library: session S reached its write point in round R
 *                  (its content names the call and the path, for the report)
 *   release-S-R    memcheck: session S may go on in round R
 * No round file: not armed, nothing stops. Environment: CTXLAB_BARRIER_DIR,
 * CTXLAB_BARRIER_SESSION (S), CTXLAB_BARRIER_SCOPE (the sandbox: writes
 * elsewhere are not write points, so an interpreter's caches never stop it).
 *
 * Built by memcheck with `cc -shared -fPIC -O1 -o barrier.so barrier.c -ldl`
 * into its run directory. Linux (glibc) only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t barrier_mu = PTHREAD_MUTEX_INITIALIZER;
/* The last round this process stopped in: one stop per request. */
static long last_round = -1;
/* Set while this thread runs the barrier's own code. */
static __thread int inside;

static int raw_open(const char *path, int flags, int mode) {
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
}

static int raw_exists(int dirfd, const char *path) {
    return syscall(SYS_faccessat, dirfd, path, F_OK) == 0;
}

static void raw_write_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        long w = syscall(SYS_write, fd, s, n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static void say(const char *msg) {
    raw_write_all(2, msg, strlen(msg));
}

/* The round memcheck has armed for this session, or -1 (not armed); its
 * bound in milliseconds into *bound_ms. */
static long armed_round(const char *dir, const char *session, long *bound_ms) {
    char path[PATH_MAX];
    char buf[32];
    if (snprintf(path, sizeof path, "%s/round-%s", dir, session) >= (int)sizeof path) return -1;
    int fd = raw_open(path, O_RDONLY, 0);
    if (fd < 0) return -1;
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end;
    long r = strtol(buf, &end, 10);
    if (end == buf) return -1;
    char *after;
    long b = strtol(end, &after, 10);
    *bound_ms = after == end || b <= 0 ? 120000 : b;
    return r;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    syscall(SYS_nanosleep, &ts, NULL);
}

/* Say where this session stopped, then wait for memcheck's release. */
static void stop(const char *dir, const char *session, long round, long bound_ms, const char *what,
                 const char *path) {
    char name[PATH_MAX];
    char note[PATH_MAX + 64];
    if (snprintf(name, sizeof name, "%s/arrived-%s-%ld", dir, session, round) >= (int)sizeof name) return;
    int n = snprintf(note, sizeof note, "%s %s\n", what, path ? path : "");
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", name) >= (int)sizeof tmp) return;
    int fd = raw_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return;
    raw_write_all(fd, note, n > 0 && n < (int)sizeof note ? (size_t)n : 0);
    syscall(SYS_close, fd);
    /* Renamed into place: memcheck never reads a half-written note. */
    syscall(SYS_renameat, AT_FDCWD, tmp, AT_FDCWD, name);
    if (snprintf(name, sizeof name, "%s/release-%s-%ld", dir, session, round) >= (int)sizeof name) return;
    long wait_us = bound_ms * 1000;
    long waited = 0;
    while (!raw_exists(AT_FDCWD, name)) {
        if (!raw_exists(AT_FDCWD, dir)) return; /* memcheck is gone */
        if (waited >= wait_us) {
            say("ctxlab barrier: not released within its bound; going on\n");
            return;
        }
        sleep_us(500);
        waited += 500;
    }
}

/* A write point: stop here if it is this request's first. */
static void point(const char *what, const char *path) {
    if (inside) return;
    const char *dir = getenv("CTXLAB_BARRIER_DIR");
    const char *session = getenv("CTXLAB_BARRIER_SESSION");
    if (!dir || !session) return;
    inside = 1;
    pthread_mutex_lock(&barrier_mu);
    long bound_ms = 0;
    long round = armed_round(dir, session, &bound_ms);
    if (round >= 0 && round != last_round) {
        last_round = round;
        stop(dir, session, round, bound_ms, what, path);
    }
    pthread_mutex_unlock(&barrier_mu);
    inside = 0;
}

/* Whether `path` (relative to `dirfd`) lies in CTXLAB_BARRIER_SCOPE, by its text. */
static int in_scope(int dirfd, const char *path) {
    const char *scope = getenv("CTXLAB_BARRIER_SCOPE");
    if (!scope || !path) return 0;
    char full[PATH_MAX * 2];
    if (path[0] == '/') {
        snprintf(full, sizeof full, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (syscall(SYS_getcwd, base, sizeof base) < 0) return 0;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            long n = syscall(SYS_readlinkat, AT_FDCWD, link, base, sizeof base - 1);
            if (n < 0) return 0;
            base[n] = 0;
        }
        snprintf(full, sizeof full, "%s/%s", base, path);
    }
    size_t n = strlen(scope);
    return strncmp(full, scope, n) == 0 && (full[n] == '/' || full[n] == 0);
}

static void at(int dirfd, const char *path, const char *what) {
    if (in_scope(dirfd, path)) point(what, path);
}

static int writes(int flags) {
    return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) != 0;
}

static int needs_mode(int flags) {
    return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

#define REAL(ret, name, ...)                                   \
    static ret (*real)(__VA_ARGS__);                           \
    if (!real) real = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

#define OPEN_LIKE(fn, sym)                                     \
    int fn(const char *path, int flags, ...) {                 \
        mode_t mode = 0;                                       \
        if (needs_mode(flags)) {                               \
            va_list ap;                                        \
            va_start(ap, flags);                               \
            mode = va_arg(ap, mode_t);                         \
            va_end(ap);                                        \
        }                                                      \
        if (writes(flags)) at(AT_FDCWD, path, "open");         \
        REAL(int, sym, const char *, int, ...);                \
        return real(path, flags, mode);                        \
    }
OPEN_LIKE(open, "open")
OPEN_LIKE(open64, "open64")

#define OPENAT_LIKE(fn, sym)                                   \
    int fn(int dirfd, const char *path, int flags, ...) {      \
        mode_t mode = 0;                                       \
        if (needs_mode(flags)) {                               \
            va_list ap;                                        \
            va_start(ap, flags);                               \
            mode = va_arg(ap, mode_t);                         \
            va_end(ap);                                        \
        }                                                      \
        if (writes(flags)) at(dirfd, path, "openat");          \
        REAL(int, sym, int, const char *, int, ...);           \
        return real(dirfd, path, flags, mode);                 \
    }
OPENAT_LIKE(openat, "openat")
OPENAT_LIKE(openat64, "openat64")

/* The fortified entry points (_FORTIFY_SOURCE) take no mode. */
int __open_2(const char *path, int flags) {
    if (writes(flags)) at(AT_FDCWD, path, "open");
    REAL(int, "__open_2", const char *, int);
    return real(path, flags);
}
int __open64_2(const char *path, int flags) {
    if (writes(flags)) at(AT_FDCWD, path, "open");
    REAL(int, "__open64_2", const char *, int);
    return real(path, flags);
}
int __openat_2(int dirfd, const char *path, int flags) {
    if (writes(flags)) at(dirfd, path, "openat");
    REAL(int, "__openat_2", int, const char *, int);
    return real(dirfd, path, flags);
}
int __openat64_2(int dirfd, const char *path, int flags) {
    if (writes(flags)) at(dirfd, path, "openat");
    REAL(int, "__openat64_2", int, const char *, int);
    return real(dirfd, path, flags);
}

int creat(const char *path, mode_t mode) {
    at(AT_FDCWD, path, "creat");
    REAL(int, "creat", const char *, mode_t);
    return real(path, mode);
}
int creat64(const char *path, mode_t mode) {
    at(AT_FDCWD, path, "creat");
    REAL(int, "creat64", const char *, mode_t);
    return real(path, mode);
}

/* glibc's fopen opens without going through `open`. */
FILE *fopen(const char *path, const char *mode) {
    if (mode && strpbrk(mode, "wa+")) at(AT_FDCWD, path, "fopen");
    REAL(FILE *, "fopen", const char *, const char *);
    return real(path, mode);
}
FILE *fopen64(const char *path, const char *mode) {
    if (mode && strpbrk(mode, "wa+")) at(AT_FDCWD, path, "fopen");
    REAL(FILE *, "fopen64", const char *, const char *);
    return real(path, mode);
}

int rename(const char *from, const char *to) {
    if (in_scope(AT_FDCWD, from) || in_scope(AT_FDCWD, to)) point("rename", to);
    REAL(int, "rename", const char *, const char *);
    return real(from, to);
}
int renameat(int fromfd, const char *from, int tofd, const char *to) {
    if (in_scope(fromfd, from) || in_scope(tofd, to)) point("renameat", to);
    REAL(int, "renameat", int, const char *, int, const char *);
    return real(fromfd, from, tofd, to);
}
int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    if (in_scope(fromfd, from) || in_scope(tofd, to)) point("renameat2", to);
    REAL(int, "renameat2", int, const char *, int, const char *, unsigned int);
    return real(fromfd, from, tofd, to, flags);
}

int unlink(const char *path) {
    at(AT_FDCWD, path, "unlink");
    REAL(int, "unlink", const char *);
    return real(path);
}
int unlinkat(int dirfd, const char *path, int flags) {
    at(dirfd, path, "unlinkat");
    REAL(int, "unlinkat", int, const char *, int);
    return real(dirfd, path, flags);
}
int rmdir(const char *path) {
    at(AT_FDCWD, path, "rmdir");
    REAL(int, "rmdir", const char *);
    return real(path);
}
/* glibc's remove calls unlink and rmdir without going through them. */
int remove(const char *path) {
    at(AT_FDCWD, path, "remove");
    REAL(int, "remove", const char *);
    return real(path);
}

/* Making a directory that is already there changes nothing (tools call
 * `mkdir -p` on every command): only a new one is a write point. */
int mkdir(const char *path, mode_t mode) {
    if (!raw_exists(AT_FDCWD, path)) at(AT_FDCWD, path, "mkdir");
    REAL(int, "mkdir", const char *, mode_t);
    return real(path, mode);
}
int mkdirat(int dirfd, const char *path, mode_t mode) {
    if (!raw_exists(dirfd, path)) at(dirfd, path, "mkdirat");
    REAL(int, "mkdirat", int, const char *, mode_t);
    return real(dirfd, path, mode);
}

int link(const char *from, const char *to) {
    at(AT_FDCWD, to, "link");
    REAL(int, "link", const char *, const char *);
    return real(from, to);
}
int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
    at(tofd, to, "linkat");
    REAL(int, "linkat", int, const char *, int, const char *, int);
    return real(fromfd, from, tofd, to, flags);
}
int symlink(const char *target, const char *path) {
    at(AT_FDCWD, path, "symlink");
    REAL(int, "symlink", const char *, const char *);
    return real(target, path);
}
int symlinkat(const char *target, int dirfd, const char *path) {
    at(dirfd, path, "symlinkat");
    REAL(int, "symlinkat", const char *, int, const char *);
    return real(target, dirfd, path);
}
int truncate(const char *path, off_t len) {
    at(AT_FDCWD, path, "truncate");
    REAL(int, "truncate", const char *, off_t);
    return real(path, len);
}
int truncate64(const char *path, off64_t len) {
    at(AT_FDCWD, path, "truncate");
    REAL(int, "truncate64", const char *, off64_t);
    return real(path, len);
}

/* A lock is a write point wherever its file is: a tool that locks before
 * it reads is stopped before its lock, never while holding it. */
int flock(int fd, int op) {
    if ((op & LOCK_UN) == 0) point("flock", "");
    REAL(int, "flock", int, int);
    return real(fd, op);
}

static int locks(int cmd, void *arg) {
    if (cmd != F_SETLK && cmd != F_SETLKW && cmd != F_OFD_SETLK && cmd != F_OFD_SETLKW) return 0;
    const struct flock *l = (const struct flock *)arg;
    return l && l->l_type != F_UNLCK;
}

#define FCNTL_LIKE(fn, sym)                                    \
    int fn(int fd, int cmd, ...) {                             \
        va_list ap;                                            \
        va_start(ap, cmd);                                     \
        void *arg = va_arg(ap, void *);                        \
        va_end(ap);                                            \
        if (locks(cmd, arg)) point("fcntl", "");               \
        REAL(int, sym, int, int, ...);                         \
        return real(fd, cmd, arg);                             \
    }
FCNTL_LIKE(fcntl, "fcntl")
FCNTL_LIKE(fcntl64, "fcntl64")

int lockf(int fd, int cmd, off_t len) {
    if (cmd == F_LOCK || cmd == F_TLOCK) point("lockf", "");
    REAL(int, "lockf", int, int, off_t);
    return real(fd, cmd, len);
}
int lockf64(int fd, int cmd, off64_t len) {
    if (cmd == F_LOCK || cmd == F_TLOCK) point("lockf", "");
    REAL(int, "lockf64", int, int, off64_t);
    return real(fd, cmd, len);
}

/*
 * fenced-lab's wall-clock shim: an LD_PRELOAD library that offsets a
 * server's wall clock by the signed seconds written in a file, re-read on
 * every call, and leaves every other clock alone.
 *
 * Why not libfaketime: Debian's redis-server is linked with jemalloc, and
 * libfaketime 0.9.10 cannot initialise in a jemalloc process (its dlsym()
 * allocates, jemalloc's initialisation reads clock_gettime(), which calls
 * back into the uninitialised libfaketime; upstream wolfcw/libfaketime#130):
 * the server dies at start. This shim allocates nothing and looks nothing
 * up: it reads the real clocks by system call.
 *
 * What it fakes, and only that (an NTP step of the wall clock):
 *   clock_gettime(CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI),
 *   gettimeofday(), time().
 * CLOCK_MONOTONIC, CLOCK_BOOTTIME and the process clocks pass through.
 *
 * The file (FENCED_WALL_CLOCK_FILE) holds one offset as fenced-lab's
 * faketime::offset_spec writes it: a sign, whole seconds, optionally a dot
 * and up to nine digits of fraction ("+1.500000000", "-3"). The runner
 * replaces it by rename, so a read sees the old offset or the new one. A
 * missing or unreadable file keeps the last offset read (0 at first).
 *
 * Contract: calls made through the dynamic linker are faked; glibc's own
 * internal calls (which do not go through the PLT) are not. Redis reads its
 * clock with gettimeofday() (ustime/mstime), which is faked.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* A copy, not getenv()'s pointer: Redis rewrites its environment's memory
 * for its process title (setproctitle), which would empty the name. */
static char offset_file[4096];
static long long last_offset_ns;

__attribute__((constructor)) static void fenced_wall_clock_init(void) {
    const char *name = getenv("FENCED_WALL_CLOCK_FILE");
    size_t i;
    if (name == NULL) return;
    for (i = 0; name[i] != '\0' && i + 1 < sizeof offset_file; i++) offset_file[i] = name[i];
    /* A name too long to copy fakes nothing (offset 0), rather than a prefix. */
    offset_file[name[i] == '\0' ? i : 0] = '\0';
}

/* Parses "+S[.F]" or "-S[.F]"; returns 0 and sets *out on success. */
static int parse_offset(const char *text, long n, long long *out) {
    long i = 0;
    int negative = 0;
    long long seconds = 0, nanos = 0, scale = 100000000LL;
    int digits = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t')) i++;
    if (i < n && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    for (; i < n && text[i] >= '0' && text[i] <= '9'; i++, digits++) {
        if (seconds > 1000000000000LL) return -1;
        seconds = seconds * 10 + (text[i] - '0');
    }
    if (digits == 0) return -1;
    if (i < n && text[i] == '.') {
        for (i++; i < n && text[i] >= '0' && text[i] <= '9'; i++) {
            nanos += (text[i] - '0') * scale;
            scale /= 10;
        }
    }
    *out = (seconds * 1000000000LL + nanos) * (negative ? -1 : 1);
    return 0;
}

static long long offset_ns(void) {
    char buffer[64];
    long n;
    int fd;
    long long parsed;
    if (offset_file[0] == '\0') return last_offset_ns;
    fd = (int)syscall(SYS_openat, AT_FDCWD, offset_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return last_offset_ns;
    n = (long)syscall(SYS_read, fd, buffer, sizeof buffer);
    syscall(SYS_close, fd);
    if (n > 0 && parse_offset(buffer, n, &parsed) == 0) last_offset_ns = parsed;
    return last_offset_ns;
}

static void shift(struct timespec *ts, long long by_ns) {
    long long ns = (long long)ts->tv_nsec + by_ns % 1000000000LL;
    long long s = (long long)ts->tv_sec + by_ns / 1000000000LL;
    while (ns < 0) { ns += 1000000000LL; s -= 1; }
    while (ns >= 1000000000LL) { ns -= 1000000000LL; s += 1; }
    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    long result = syscall(SYS_clock_gettime, id, ts);
    if (result == 0 &&
        (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI)) {
        shift(ts, offset_ns());
    }
    return (int)result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}

/*
 * Power-loss journal: an LD_PRELOAD shim for the simulated power loss of
 * crates/server/tests/crash.rs.
 *
 * A process killed with SIGKILL loses nothing it wrote: the page cache keeps it. A machine
 * that loses power keeps only what was synced. To test the latter without a machine, this
 * shim records, for every fsync/fdatasync that succeeds, the file's path and its size taken
 * *before* the sync (everything written before the call is covered by it; bytes appended by
 * another thread during the call may not be, so the record never overstates), and every
 * rename (RocksDB writes CURRENT as a temporary file, syncs it and renames it). After the
 * kill, the test truncates each file to its last synced size, following renames: the data
 * directory is then what a power loss could have left.
 *
 * Records are lines appended with one write(2) each to $SHOAL_POWERLOSS_JOURNAL (O_APPEND):
 *   S <size> <path>      a sync that covered <size> bytes of <path>
 *   R <from>\t<to>       a rename
 * A record is written after the real call returns and before the shim returns to the caller,
 * so every commit that was acknowledged after a sync has that sync's record in the journal.
 *
 * Not modelled: lost directory entries (a created file whose directory was not synced), torn
 * or reordered writes within the synced range.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int journal_fd = -1;

__attribute__((constructor)) static void open_journal(void) {
    const char *p = getenv("SHOAL_POWERLOSS_JOURNAL");
    if (p && *p) {
        journal_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
}

static void record(const char *line, size_t len) {
    if (journal_fd >= 0) {
        ssize_t r = write(journal_fd, line, len);
        (void)r;
    }
}

/* The path of fd and its size now; 0 if unknown (not a regular file). */
static int describe(int fd, char *path, size_t cap, long long *size) {
    char link[64];
    struct stat st;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, cap - 1);
    if (n <= 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return 0;
    }
    path[n] = 0;
    *size = (long long)st.st_size;
    return 1;
}

static void record_sync(int ok, const char *path, long long size) {
    if (ok) {
        char line[PATH_MAX + 64];
        int len = snprintf(line, sizeof line, "S %lld %s\n", size, path);
        if (len > 0 && (size_t)len < sizeof line) {
            record(line, (size_t)len);
        }
    }
}

#define SYNC_WRAPPER(name)                                                  \
    int name(int fd) {                                                      \
        static int (*real)(int);                                            \
        if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, #name);            \
        char path[PATH_MAX];                                                \
        long long size = 0;                                                 \
        int known = describe(fd, path, sizeof path, &size);                 \
        int r = real(fd);                                                   \
        record_sync(known && r == 0, path, size);                           \
        return r;                                                           \
    }

SYNC_WRAPPER(fsync)
SYNC_WRAPPER(fdatasync)

static void record_rename(int ok, const char *from, const char *to) {
    if (ok) {
        char a[PATH_MAX], b[PATH_MAX], line[2 * PATH_MAX + 8];
        if (!realpath(to, b)) return;
        /* `from` is gone: resolve its directory instead. */
        const char *slash = strrchr(from, '/');
        if (slash) {
            char dir[PATH_MAX];
            size_t dl = (size_t)(slash - from);
            if (dl >= sizeof dir) return;
            memcpy(dir, from, dl);
            dir[dl] = 0;
            if (!realpath(dl ? dir : "/", a)) return;
            strncat(a, slash, sizeof a - strlen(a) - 1);
        } else {
            if (!getcwd(a, sizeof a)) return;
            strncat(a, "/", sizeof a - strlen(a) - 1);
            strncat(a, from, sizeof a - strlen(a) - 1);
        }
        int len = snprintf(line, sizeof line, "R %s\t%s\n", a, b);
        if (len > 0 && (size_t)len < sizeof line) record(line, (size_t)len);
    }
}

int rename(const char *from, const char *to) {
    static int (*real)(const char *, const char *);
    if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    int r = real(from, to);
    record_rename(r == 0, from, to);
    return r;
}

// The file steps `benchmarks/file-protocol.py` measures, in C so that nothing but the steps costs
// CPU: `file-protocol WAY DIRECTORY THREADS` writes the small workload's 2,000 files into
// DIRECTORY one way, with THREADS threads, and prints its wall time and the process's kernel and
// user CPU in seconds.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

enum way { CREATED, SYNCED, NAMED, MIRROR };

// A record of the size mirror puts on a small file at commit (its compact CommitRecord, here of
// the form Imgur's validators take: an MD5 ETag, a date, a length), which ext4 keeps in a
// 256-byte inode.
static const char record[36] = "m\003abcdefgh\200\220\003\001\200\340\226\312\006\0010123456789abcdef";
static enum way way;
static int final_dir, parts_dir;
static char full[50 << 10], thumbnail[8 << 10];
static atomic_int next_file;
static const int file_count = 2000;

static void fail(const char *step, const char *name) {
    fprintf(stderr, "file-protocol: %s %s: %s\n", step, name, strerror(errno));
    exit(1);
}

static void write_all(int fd, const char *body, size_t length, const char *name) {
    if (pwrite(fd, body, length, 0) != (ssize_t)length) fail("pwrite", name);
}

static void write_one(int number) {
    char name[32], part[40];
    const char *body = number % 2 ? thumbnail : full;
    size_t length = number % 2 ? sizeof thumbnail : sizeof full;
    snprintf(name, sizeof name, "i%05d%s.jpg", number / 2, number % 2 ? "b" : "");
    if (way == CREATED || way == SYNCED) {
        int fd = openat(final_dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) fail("openat", name);
        write_all(fd, body, length, name);
        if (way == SYNCED && fdatasync(fd) != 0) fail("fdatasync", name);
        close(fd);
        return;
    }
    // mirror's steps, in its order (strace of a run): the final name looked at, the partial
    // looked at, created, checked, written (its writeback started), closed; reopened, checked,
    // its record attached, synced, renamed into place, its record taken off, its date set.
    struct stat info;
    snprintf(part, sizeof part, "%s.part", name);
    if (fstatat(final_dir, name, &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) fail("fstatat", name);
    if (fstatat(parts_dir, part, &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) fail("fstatat", part);
    int fd = openat(parts_dir, part, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || fstat(fd, &info) != 0) fail("openat", part);
    write_all(fd, body, length, part);
    if (way == MIRROR) sync_file_range(fd, 0, (off_t)length, SYNC_FILE_RANGE_WRITE);
    close(fd);
    fd = openat(parts_dir, part, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &info) != 0) fail("openat", part);
    if (fsetxattr(fd, "user.mirror.partial", record, sizeof record, 0) != 0) fail("fsetxattr", part);
    if (way == MIRROR && fdatasync(fd) != 0) fail("fdatasync", part);
    if (syscall(SYS_renameat2, parts_dir, part, final_dir, name, 1 /* RENAME_NOREPLACE */) != 0) fail("renameat2", name);
    if (fremovexattr(fd, "user.mirror.partial") != 0) fail("fremovexattr", name);
    struct timespec times[2] = {{0, UTIME_OMIT}, {1764000000, 0}};
    if (futimens(fd, times) != 0) fail("futimens", name);
    close(fd);
}

static void *worker(void *unused) {
    (void)unused;
    for (int number; (number = atomic_fetch_add(&next_file, 1)) < file_count;) write_one(number);
    return NULL;
}

static double seconds(struct timeval time) { return (double)time.tv_sec + (double)time.tv_usec / 1e6; }

int main(int argc, char **argv) {
    static const char *names[] = {"created", "synced", "named", "mirror"};
    if (argc != 4) {
        fprintf(stderr, "usage: file-protocol created|synced|named|mirror DIRECTORY THREADS\n");
        return 64;
    }
    way = (enum way)-1;
    for (int index = 0; index < 4; index++) if (strcmp(argv[1], names[index]) == 0) way = (enum way)index;
    int threads = atoi(argv[3]);
    if ((int)way < 0 || threads < 1 || threads > 256) {
        fprintf(stderr, "file-protocol: unknown way or thread count\n");
        return 64;
    }
    for (size_t index = 0; index < sizeof full; index++) full[index] = (char)random();
    for (size_t index = 0; index < sizeof thumbnail; index++) thumbnail[index] = (char)random();
    char path[4096];
    snprintf(path, sizeof path, "%s/final", argv[2]);
    if (mkdir(path, 0755) != 0 || (final_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) fail("mkdir", path);
    snprintf(path, sizeof path, "%s/partials", argv[2]);
    if (mkdir(path, 0755) != 0 || (parts_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) fail("mkdir", path);

    struct timespec start, end;
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t pool[256];
    for (int index = 0; index < threads; index++) pthread_create(&pool[index], NULL, worker, NULL);
    for (int index = 0; index < threads; index++) pthread_join(pool[index], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    getrusage(RUSAGE_SELF, &after);
    printf("%.6f %.6f %.6f\n", (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9,
           seconds(after.ru_stime) - seconds(before.ru_stime), seconds(after.ru_utime) - seconds(before.ru_utime));
    return 0;
}

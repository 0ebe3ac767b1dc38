// The file steps `benchmarks/file-protocol.py` measures, in C so that nothing but the steps costs
// CPU: `file-protocol WAY DIRECTORY THREADS` writes the small workload's 2,000 files into
// DIRECTORY one way, with THREADS threads, and prints its wall time and the process's kernel and
// user CPU in seconds (and, for `batched`, the number of syncs on standard error).
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

enum way { CREATED, SYNCED, NAMED, MIRROR, BATCHED };

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

static void names_of(int number, char name[32], char part[40]) {
    snprintf(name, 32, "i%05d%s.jpg", number / 2, number % 2 ? "b" : "");
    snprintf(part, 40, "%s.part", name);
}

// The steps after the sync: renamed into place, the server's date set, the record taken off.
static void name_file(int fd, int number) {
    char name[32], part[40];
    names_of(number, name, part);
    if (syscall(SYS_renameat2, parts_dir, part, final_dir, name, 1 /* RENAME_NOREPLACE */) != 0) fail("renameat2", name);
    struct timespec times[2] = {{0, UTIME_OMIT}, {1764000000, 0}};
    if (futimens(fd, times) != 0) fail("futimens", name);
    if (fremovexattr(fd, "user.mirror.partial") != 0) fail("fremovexattr", name);
    close(fd);
}

// `batched`: durability before naming with one syncfs for many files. The writers hand each
// written file (still open) to one committer and go on; the committer, 2 ms after the first file
// of a batch (and not before it has named the last batch), takes all it was handed, syncs the
// file system once and names them. No download waits for its file's sync, so the batches are as
// large as they can be: a floor for any grouping of syncs. Up to all 2,000 files may be open at
// once, so the limit of open files is raised first.
static pthread_mutex_t handed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handed_some = PTHREAD_COND_INITIALIZER;
static int handed_fd[2000], handed_number[2000], handed_count, writers_done, syncs;

static void hand_to_committer(int fd, int number) {
    pthread_mutex_lock(&handed_lock);
    handed_fd[handed_count] = fd;
    handed_number[handed_count++] = number;
    pthread_cond_signal(&handed_some);
    pthread_mutex_unlock(&handed_lock);
}

static void *committer(void *unused) {
    (void)unused;
    static int fds[2000], numbers[2000];
    for (;;) {
        pthread_mutex_lock(&handed_lock);
        while (handed_count == 0 && !writers_done) pthread_cond_wait(&handed_some, &handed_lock);
        int finished = handed_count == 0 && writers_done;
        pthread_mutex_unlock(&handed_lock);
        if (finished) return NULL;
        usleep(2000);
        pthread_mutex_lock(&handed_lock);
        int count = handed_count;
        memcpy(fds, handed_fd, sizeof(int) * (size_t)count);
        memcpy(numbers, handed_number, sizeof(int) * (size_t)count);
        handed_count = 0;
        pthread_mutex_unlock(&handed_lock);
        if (syncfs(fds[0]) != 0) fail("syncfs", "batch");
        syncs++;
        for (int index = 0; index < count; index++) name_file(fds[index], numbers[index]);
    }
}

static void write_one(int number) {
    char name[32], part[40];
    names_of(number, name, part);
    const char *body = number % 2 ? thumbnail : full;
    size_t length = number % 2 ? sizeof thumbnail : sizeof full;
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
    // its record attached, synced, renamed into place, its date set, its record taken off.
    struct stat info;
    if (fstatat(final_dir, name, &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) fail("fstatat", name);
    if (fstatat(parts_dir, part, &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) fail("fstatat", part);
    int fd = openat(parts_dir, part, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || fstat(fd, &info) != 0) fail("openat", part);
    write_all(fd, body, length, part);
    if (way == MIRROR || way == BATCHED) sync_file_range(fd, 0, (off_t)length, SYNC_FILE_RANGE_WRITE);
    close(fd);
    fd = openat(parts_dir, part, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &info) != 0) fail("openat", part);
    if (fsetxattr(fd, "user.mirror.partial", record, sizeof record, 0) != 0) fail("fsetxattr", part);
    if (way == MIRROR && fdatasync(fd) != 0) fail("fdatasync", part);
    if (way == BATCHED) {
        hand_to_committer(fd, number);
        return;
    }
    name_file(fd, number);
}

static void *worker(void *unused) {
    (void)unused;
    for (int number; (number = atomic_fetch_add(&next_file, 1)) < file_count;) write_one(number);
    return NULL;
}

static double seconds(struct timeval time) { return (double)time.tv_sec + (double)time.tv_usec / 1e6; }

int main(int argc, char **argv) {
    static const char *names[] = {"created", "synced", "named", "mirror", "batched"};
    if (argc != 4) {
        fprintf(stderr, "usage: file-protocol created|synced|named|mirror|batched DIRECTORY THREADS\n");
        return 64;
    }
    way = (enum way)-1;
    for (int index = 0; index < 5; index++) if (strcmp(argv[1], names[index]) == 0) way = (enum way)index;
    int threads = atoi(argv[3]);
    if ((int)way < 0 || threads < 1 || threads > 256) {
        fprintf(stderr, "file-protocol: unknown way or thread count\n");
        return 64;
    }
    struct rlimit files;
    if (way == BATCHED && getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < (rlim_t)file_count + 64) {
        files.rlim_cur = (rlim_t)file_count + 64;
        if (files.rlim_max < files.rlim_cur || setrlimit(RLIMIT_NOFILE, &files) != 0) fail("setrlimit", "RLIMIT_NOFILE");
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
    pthread_t committing;
    if (way == BATCHED) pthread_create(&committing, NULL, committer, NULL);
    for (int index = 0; index < threads; index++) pthread_join(pool[index], NULL);
    if (way == BATCHED) {
        pthread_mutex_lock(&handed_lock);
        writers_done = 1;
        pthread_cond_signal(&handed_some);
        pthread_mutex_unlock(&handed_lock);
        pthread_join(committing, NULL);
        fprintf(stderr, "syncs %d\n", syncs);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    getrusage(RUSAGE_SELF, &after);
    printf("%.6f %.6f %.6f\n", (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9,
           seconds(after.ru_stime) - seconds(before.ru_stime), seconds(after.ru_utime) - seconds(before.ru_utime));
    return 0;
}

// A floor under mirror's small workload: curl's network (libcurl's multi interface, N transfers
// at once, a connection kept per slot, as `curl --parallel` does) with nothing of mirror's but
// its file steps, in C so that what it costs is the steps' and libcurl's alone.
//
//   floor WAY BASE PATHS DIRECTORY PARALLEL
//
// fetches BASE followed by each line of PATHS into DIRECTORY, PARALLEL at once, one way:
//
//   plain    each body written to its final name as it arrives, as curl -o does (the harness's
//            check: it should cost what curl does)
//   steps    mirror's steps for each file: the final name and the partial looked at, the partial
//            created in a folder apart and written once the body is whole (mirror buffers a small
//            body), its writeback started; then, on one of 16 threads (mirror's blocking queues),
//            reopened, its record attached, fdatasync, renamed into place with RENAME_NOREPLACE,
//            its date set, its record taken off: durability before naming, nothing corrupt on a kill;
//            the folder synced every 128 names and at the end, as mirror syncs the folders that
//            gained names
//   grouped  `steps` with one syncfs for many files: the loop hands each written file to one
//            committer, which (once it has named the last batch) syncs the file system once and
//            names all it was handed; no transfer waits for its file's sync
//
// Not here, and part of mirror's run: the API pages, the state database, the scheduler, the
// checks of each answer. What this program takes above `plain` is what the guarantees cost a
// tool that has nothing else to do; what mirror takes above this program is mirror's own.
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

enum way { PLAIN, STEPS, GROUPED };

// A record of the size mirror puts on a small file at commit (see benchmarks/file-protocol.c).
static const char record[36] = "m\003abcdefgh\200\220\003\001\200\340\226\312\006\0010123456789abcdef";
static enum way way;
static int final_dir, parts_dir;

static void fail(const char *step, const char *name) {
    fprintf(stderr, "floor: %s %s: %s\n", step, name, strerror(errno));
    exit(1);
}

struct transfer {
    char name[256], part[264];
    int fd;
    char *body;
    size_t length, capacity;
};

// The commit, on another thread: what mirror does on its blocking queues.
static void commit(struct transfer *transfer) {
    struct stat info;
    int fd = openat(parts_dir, transfer->part, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &info) != 0) fail("openat", transfer->part);
    if (fsetxattr(fd, "user.mirror.partial", record, sizeof record, 0) != 0) fail("fsetxattr", transfer->part);
    if (way == STEPS && fdatasync(fd) != 0) fail("fdatasync", transfer->part);
    transfer->fd = fd;
}

// mirror syncs the folders that gained names every 128 names (and at the end): so does this.
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static int names_since_sync;

static void note_name(void) {
    pthread_mutex_lock(&names_lock);
    int due = ++names_since_sync >= 128;
    if (due) names_since_sync = 0;
    pthread_mutex_unlock(&names_lock);
    if (due && fsync(final_dir) != 0) fail("fsync", "the folder");
}

static void name_file(struct transfer *transfer) {
    if (syscall(SYS_renameat2, parts_dir, transfer->part, final_dir, transfer->name, 1 /* RENAME_NOREPLACE */) != 0)
        fail("renameat2", transfer->name);
    note_name();
    struct timespec times[2] = {{0, UTIME_OMIT}, {1764000000, 0}};
    if (futimens(transfer->fd, times) != 0) fail("futimens", transfer->name);
    if (fremovexattr(transfer->fd, "user.mirror.partial") != 0) fail("fremovexattr", transfer->name);
    close(transfer->fd);
    free(transfer);
}

// Handed-over files: a queue the committing threads take from.
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_filled = PTHREAD_COND_INITIALIZER;
static struct transfer **queue;
static int queued, queue_capacity, loop_done, syncs;

static void hand_over(struct transfer *transfer) {
    pthread_mutex_lock(&queue_lock);
    if (queued == queue_capacity) {
        queue_capacity = queue_capacity ? queue_capacity * 2 : 256;
        queue = realloc(queue, sizeof *queue * (size_t)queue_capacity);
        if (!queue) fail("realloc", "queue");
    }
    queue[queued++] = transfer;
    pthread_cond_signal(&queue_filled);
    pthread_mutex_unlock(&queue_lock);
}

// `steps`: 16 threads, one file each at a time.
static void *committing_thread(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&queue_lock);
        while (queued == 0 && !loop_done) pthread_cond_wait(&queue_filled, &queue_lock);
        if (queued == 0) {
            pthread_mutex_unlock(&queue_lock);
            return NULL;
        }
        struct transfer *transfer = queue[--queued];
        pthread_mutex_unlock(&queue_lock);
        commit(transfer);
        name_file(transfer);
    }
}

// `grouped`: one thread, all that waits at once, one syncfs.
static void *grouping_thread(void *unused) {
    (void)unused;
    struct transfer **batch = NULL;
    int capacity = 0;
    for (;;) {
        pthread_mutex_lock(&queue_lock);
        while (queued == 0 && !loop_done) pthread_cond_wait(&queue_filled, &queue_lock);
        int count = queued;
        if (count == 0) {
            pthread_mutex_unlock(&queue_lock);
            free(batch);
            return NULL;
        }
        if (count > capacity) {
            capacity = queue_capacity;
            batch = realloc(batch, sizeof *batch * (size_t)capacity);
            if (!batch) fail("realloc", "batch");
        }
        memcpy(batch, queue, sizeof *batch * (size_t)count);
        queued = 0;
        pthread_mutex_unlock(&queue_lock);
        for (int index = 0; index < count; index++) commit(batch[index]);
        if (syncfs(final_dir) != 0) fail("syncfs", "batch");
        syncs++;
        for (int index = 0; index < count; index++) name_file(batch[index]);
    }
}

static size_t receive(char *bytes, size_t size, size_t count, void *context) {
    struct transfer *transfer = context;
    size_t length = size * count;
    if (way == PLAIN) {
        if (transfer->fd < 0) {
            transfer->fd = openat(final_dir, transfer->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (transfer->fd < 0) fail("openat", transfer->name);
        }
        if (write(transfer->fd, bytes, length) != (ssize_t)length) fail("write", transfer->name);
        return length;
    }
    if (transfer->fd < 0) {
        // mirror's first bytes: the final name and the partial looked at, the partial created.
        struct stat info;
        if (fstatat(final_dir, transfer->name, &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) fail("fstatat", transfer->name);
        if (fstatat(parts_dir, transfer->part, &info, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) fail("fstatat", transfer->part);
        transfer->fd = openat(parts_dir, transfer->part, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (transfer->fd < 0 || fstat(transfer->fd, &info) != 0) fail("openat", transfer->part);
    }
    if (transfer->length + length > transfer->capacity) {
        transfer->capacity = (transfer->length + length) * 2;
        transfer->body = realloc(transfer->body, transfer->capacity);
        if (!transfer->body) fail("realloc", transfer->name);
    }
    memcpy(transfer->body + transfer->length, bytes, length);
    transfer->length += length;
    return length;
}

static void finish(struct transfer *transfer) {
    if (transfer->fd < 0) fail("empty body", transfer->name);
    if (way == PLAIN) {
        close(transfer->fd);
        free(transfer);
        return;
    }
    if (pwrite(transfer->fd, transfer->body, transfer->length, 0) != (ssize_t)transfer->length) fail("pwrite", transfer->part);
    sync_file_range(transfer->fd, 0, (off_t)transfer->length, SYNC_FILE_RANGE_WRITE);
    close(transfer->fd);
    free(transfer->body);
    transfer->body = NULL;
    hand_over(transfer);
}

static char **paths;
static int path_count, next_path;
static const char *base;

static void start_next(CURLM *multi) {
    if (next_path == path_count) return;
    const char *path = paths[next_path++];
    struct transfer *transfer = calloc(1, sizeof *transfer);
    if (!transfer) fail("calloc", path);
    transfer->fd = -1;
    snprintf(transfer->name, sizeof transfer->name, "%s", path[0] == '/' ? path + 1 : path);
    snprintf(transfer->part, sizeof transfer->part, "%s.part", transfer->name);
    char url[4096];
    snprintf(url, sizeof url, "%s%s", base, path);
    CURL *easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, receive);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, transfer);
    curl_easy_setopt(easy, CURLOPT_FAILONERROR, 1L);
    curl_multi_add_handle(multi, easy);
}

int main(int argc, char **argv) {
    static const char *ways[] = {"plain", "steps", "grouped"};
    if (argc != 6) {
        fprintf(stderr, "usage: floor plain|steps|grouped BASE PATHS DIRECTORY PARALLEL\n");
        return 64;
    }
    way = (enum way)-1;
    for (int index = 0; index < 3; index++) if (strcmp(argv[1], ways[index]) == 0) way = (enum way)index;
    base = argv[2];
    int parallel = atoi(argv[5]);
    if ((int)way < 0 || parallel < 1) {
        fprintf(stderr, "floor: unknown way, or no transfers at once\n");
        return 64;
    }
    FILE *list = fopen(argv[3], "r");
    if (!list) fail("fopen", argv[3]);
    char line[4096];
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) continue;
        paths = realloc(paths, sizeof *paths * (size_t)(path_count + 1));
        paths[path_count++] = strdup(line);
    }
    fclose(list);
    if ((final_dir = open(argv[4], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) fail("open", argv[4]);
    if (way != PLAIN) {
        char partials[4096];
        snprintf(partials, sizeof partials, "%s/.partials", argv[4]);
        if (mkdir(partials, 0755) != 0 || (parts_dir = open(partials, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
            fail("mkdir", partials);
    }
    pthread_t committers[16];
    int committer_count = way == STEPS ? 16 : way == GROUPED ? 1 : 0;
    for (int index = 0; index < committer_count; index++)
        pthread_create(&committers[index], NULL, way == STEPS ? committing_thread : grouping_thread, NULL);

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)parallel);
    for (int index = 0; index < parallel; index++) start_next(multi);
    int running = 1, failures = 0;
    while (running) {
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        int left, ended = 0;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            struct transfer *transfer;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&transfer);
            if (message->data.result != CURLE_OK) {
                fprintf(stderr, "floor: %s: %s\n", transfer->name, curl_easy_strerror(message->data.result));
                failures++;
                if (transfer->fd >= 0) {
                    close(transfer->fd);
                    unlinkat(way == PLAIN ? final_dir : parts_dir, way == PLAIN ? transfer->name : transfer->part, 0);
                }
                free(transfer->body);
                free(transfer);
            } else {
                finish(transfer);
            }
            curl_multi_remove_handle(multi, easy);
            curl_easy_cleanup(easy);
            start_next(multi);
            ended++;
        }
        // The transfers just added start at the next perform, not after a wait.
        if (ended) running = 1;
        else if (running) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    curl_multi_cleanup(multi);
    pthread_mutex_lock(&queue_lock);
    loop_done = 1;
    pthread_cond_broadcast(&queue_filled);
    pthread_mutex_unlock(&queue_lock);
    for (int index = 0; index < committer_count; index++) pthread_join(committers[index], NULL);
    if (way != PLAIN && names_since_sync > 0 && fsync(final_dir) != 0) fail("fsync", "the folder");
    if (way == GROUPED) fprintf(stderr, "syncs %d\n", syncs);
    if (way != PLAIN && unlinkat(final_dir, ".partials", AT_REMOVEDIR) != 0) fail("rmdir", ".partials");
    return failures ? 1 : 0;
}

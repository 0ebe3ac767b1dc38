// One large body written as mirror's FileSink writes it: 1 GiB in writes of 1 MiB (its buffer),
// then fdatasync, as the commit does. `way` says when the writeback starts
// (sync_file_range(SYNC_FILE_RANGE_WRITE)) while the body is written:
//   none     never: the fdatasync writes it all
//   each     after every write, for the MiB just written (mirror before 2026-12-07)
//   lagging  for what lies 8 MiB or more behind the end, 8 MiB at a time, and the tail once the
//            last write is done (mirror since)
// Prints wall, kernel and user seconds. Driven by benchmarks/writeback.py.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: writeback none|each|lagging FILE\n"); return 64; }
    const char *way = argv[1];
    int each = strcmp(way, "each") == 0, lagging = strcmp(way, "lagging") == 0;
    if (!each && !lagging && strcmp(way, "none") != 0) { fprintf(stderr, "writeback: no way %s\n", way); return 64; }
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(argv[2]); return 1; }
    const off_t chunk = 1 << 20, lag = 8 << 20, total = (off_t)1 << 30;
    char *buffer = malloc(chunk);
    memset(buffer, 7, chunk);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    off_t written = 0, started = 0;
    while (written < total) {
        if (pwrite(fd, buffer, chunk, written) != chunk) { perror("pwrite"); return 1; }
        written += chunk;
        if (each) sync_file_range(fd, written - chunk, chunk, SYNC_FILE_RANGE_WRITE);
        if (lagging && written - lag - started >= lag) {
            sync_file_range(fd, started, written - lag - started, SYNC_FILE_RANGE_WRITE);
            started = written - lag;
        }
    }
    if (lagging) sync_file_range(fd, started, written - started, SYNC_FILE_RANGE_WRITE);
    if (fdatasync(fd) != 0) { perror("fdatasync"); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &end);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("%.3f %.3f %.3f\n", (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9,
           seconds(usage.ru_stime), seconds(usage.ru_utime));
    return close(fd) == 0 ? 0 : 1;
}

#define _GNU_SOURCE
#include "CMirrorSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int mirror_renameat_noreplace(int fromdir, const char *from, int todir, const char *to) {
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, fromdir, from, todir, to, RENAME_NOREPLACE);
#else
    errno = ENOSYS;
    return -1;
#endif
}

ssize_t mirror_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}

ssize_t mirror_flistxattr(int fd, char *list, size_t size) {
    return flistxattr(fd, list, size);
}

int mirror_fsetxattr(int fd, const char *name, const void *value, size_t size) {
    return fsetxattr(fd, name, value, size, 0);
}

int mirror_fremovexattr(int fd, const char *name) {
    return fremovexattr(fd, name);
}

int mirror_start_writeback(int fd, off_t offset, off_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

// scripts/install writes the commit over this marker in the installed binary: stamping the
// copy, rather than compiling the commit in, spares a whole release rebuild per commit.
static volatile const char commit_stamp[48] = "@@MIRROR-COMMIT@@";

const char *mirror_build_commit(void) {
    return commit_stamp[0] == '@' ? "" : (const char *)commit_stamp;
}

void mirror_name_this_thread(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

int mirror_open_unnamed(int dirfd) {
    int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
    static _Atomic unsigned counter;
    for (int attempt = 0; attempt < 100; attempt++) {
        char name[64];
        snprintf(name, sizeof name, ".mirror-unnamed-%ld-%u", (long)getpid(), counter++);
        fd = openat(dirfd, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            unlinkat(dirfd, name, 0);
            return fd;
        }
        if (errno != EEXIST) return -1;
    }
    return -1;
}

void mirror_release_free_memory(void) {
    malloc_trim(0);
}

#define _GNU_SOURCE
#include "CMirrorSystem.h"

#include <errno.h>
#include <fcntl.h>
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

#ifndef MIRROR_COMMIT
#define MIRROR_COMMIT ""
#endif

const char *mirror_build_commit(void) {
    return MIRROR_COMMIT;
}

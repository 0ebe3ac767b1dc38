#ifndef MIRROR_SYSTEM_H
#define MIRROR_SYSTEM_H

#include <sys/types.h>

// File-system calls Swift's Glibc module does not import: renameat2 (glibc declares it only with
// _GNU_SOURCE), the extended-attribute calls of <sys/xattr.h> and sync_file_range.

/// Renames `from` in directory `fromdir` to `to` in `todir` unless `to` exists
/// (RENAME_NOREPLACE): -1 with errno EEXIST then, and EINVAL or ENOSYS where the file system or
/// kernel cannot do it.
int mirror_renameat_noreplace(int fromdir, const char *from, int todir, const char *to);

/// The git commit an installed build was made from (scripts/install stamps it into the binary);
/// "" for a build it did not stamp.
const char *mirror_build_commit(void);

ssize_t mirror_fgetxattr(int fd, const char *name, void *value, size_t size);
ssize_t mirror_flistxattr(int fd, char *list, size_t size);
int mirror_fsetxattr(int fd, const char *name, const void *value, size_t size);
int mirror_fremovexattr(int fd, const char *name);

/// Starts writing `length` bytes at `offset` of `fd` back to disk without waiting for them
/// (sync_file_range with SYNC_FILE_RANGE_WRITE): the fsync before the rename then finds little
/// left to do. Best effort; -1 with errno where the file system cannot.
int mirror_start_writeback(int fd, off_t offset, off_t length);

/// A new file in directory `dirfd` that has no name (O_TMPFILE), read and written, gone when
/// closed or when the process dies; where the file system cannot make one, a file made under
/// a hidden name that is removed at once. -1 with errno if neither can be made.
int mirror_open_unnamed(int dirfd);

/// Gives the memory malloc holds free, in every arena, back to the kernel (malloc_trim): a long
/// run's threads each fill an arena of their own and keep what they freed.
void mirror_release_free_memory(void);

/// Names the calling thread (at most 15 bytes are kept) for ps, top and debuggers.
void mirror_name_this_thread(const char *name);

#endif

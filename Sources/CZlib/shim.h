#ifndef MIRROR_CZLIB_SHIM_H
#define MIRROR_CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2 and inflateInit2 are macros over the _-suffixed functions, which Swift does not
// import: these pass the library's version and the stream's size as the macros do.
static inline int mirror_deflate_init_gzip(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

static inline int mirror_inflate_init_gzip(z_streamp stream) {
    return inflateInit2(stream, 15 + 16);
}
#endif

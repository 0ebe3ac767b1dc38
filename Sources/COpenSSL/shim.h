#ifndef MIRROR_COPENSSL_SHIM_H
#define MIRROR_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

// OpenSSL cleans up in an atexit handler, which can run while the transfer engine's thread still
// uses libcurl (and so OpenSSL): a crash at exit, seen in swift-corelibs-foundation#5469. Called
// before curl_global_init, this leaves the cleanup to process teardown.
static inline void mirror_openssl_skip_atexit_cleanup(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
#endif

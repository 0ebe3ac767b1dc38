#ifndef MIRROR_COPENSSL_SHIM_H
#define MIRROR_COPENSSL_SHIM_H
#include <openssl/evp.h>
#endif

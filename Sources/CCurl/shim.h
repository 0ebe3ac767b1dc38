#ifndef MIRROR_CCURL_SHIM_H
#define MIRROR_CCURL_SHIM_H

#include <curl/curl.h>

// Swift does not import C variadic functions, and curl_easy_setopt / curl_easy_getinfo /
// curl_multi_setopt are variadic. Each wrapper below passes exactly the argument type the option
// documents (long, curl_off_t, char*, a pointer or a callback), because the variadic reader in
// libcurl reads that type: passing an int where a long is read is undefined behaviour.

typedef size_t (*mirror_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*mirror_curl_xferinfo_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow,
                                             curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode mirror_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mirror_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mirror_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mirror_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mirror_curl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mirror_curl_easy_setopt_data_callback(CURL *handle, CURLoption option,
                                                             mirror_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode mirror_curl_easy_setopt_xferinfo_callback(CURL *handle,
                                                                 mirror_curl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

typedef int (*mirror_curl_debug_callback)(CURL *handle, curl_infotype type, char *data, size_t size, void *context);

static inline CURLcode mirror_curl_easy_setopt_debug_callback(CURL *handle, mirror_curl_debug_callback value) {
    return curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, value);
}

static inline CURLcode mirror_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode mirror_curl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode mirror_curl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode mirror_curl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode mirror_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

// Macros built from other macros or casts do not import into Swift; re-export the ones we use.
static const long mirror_curl_global_all = CURL_GLOBAL_ALL;
static const int mirror_curlpause_recv = CURLPAUSE_RECV;
static const int mirror_curlpause_cont = CURLPAUSE_CONT;
static const size_t mirror_curl_writefunc_error = CURL_WRITEFUNC_ERROR;
static const long mirror_curl_http_version_2tls = CURL_HTTP_VERSION_2TLS;
static const long mirror_curl_http_version_2_0 = CURL_HTTP_VERSION_2_0;
static const long mirror_curlpipe_multiplex = CURLPIPE_MULTIPLEX;

#endif

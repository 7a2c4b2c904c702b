// What Swift cannot call in libcurl: curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo
// are C-variadic. One non-variadic wrapper per argument type, kept thin as CSecretShim is
// (C library -> shim -> Swift); libcurl itself is linked by CCurl's module map.
#ifndef KINDLY_PUSH_CURL_SHIM_H
#define KINDLY_PUSH_CURL_SHIM_H

#include <curl/curl.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The callback of CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
typedef size_t (*kp_curl_data_callback)(char *data, size_t size, size_t count, void *context);

CURLcode kp_curl_easy_set_long(CURL *handle, CURLoption option, long value);
CURLcode kp_curl_easy_set_pointer(CURL *handle, CURLoption option, const void *value);
CURLcode kp_curl_easy_set_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode kp_curl_easy_set_callback(CURL *handle, CURLoption option, kp_curl_data_callback callback);
/// CURLOPT_PREREQFUNCTION with CURLOPT_PREREQDATA: `callback` decides, once the connection is
/// made and before the request is sent, whether it goes.
CURLcode kp_curl_easy_set_prereq(CURL *handle, curl_prereq_callback callback, void *data);
CURLMcode kp_curl_multi_set_long(CURLM *multi, CURLMoption option, long value);
CURLMcode kp_curl_multi_set_pointer(CURLM *multi, CURLMoption option, void *value);
CURLMcode kp_curl_multi_set_socket_function(CURLM *multi, curl_socket_callback callback);
CURLMcode kp_curl_multi_set_timer_function(CURLM *multi, curl_multi_timer_callback callback);
CURLcode kp_curl_easy_get_long(CURL *handle, CURLINFO info, long *value);
CURLcode kp_curl_easy_get_pointer(CURL *handle, CURLINFO info, void **value);

#ifdef __cplusplus
}
#endif

#endif

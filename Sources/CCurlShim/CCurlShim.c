#include <curl/curl.h>

#include "CCurlShim.h"

CURLcode kp_curl_easy_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode kp_curl_easy_set_pointer(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode kp_curl_easy_set_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode kp_curl_easy_set_callback(CURL *handle, CURLoption option, kp_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode kp_curl_easy_set_prereq(CURL *handle, curl_prereq_callback callback, void *data) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
    return code == CURLE_OK ? curl_easy_setopt(handle, CURLOPT_PREREQDATA, data) : code;
}

CURLMcode kp_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

CURLMcode kp_curl_multi_set_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}

CURLMcode kp_curl_multi_set_socket_function(CURLM *multi, curl_socket_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, callback);
}

CURLMcode kp_curl_multi_set_timer_function(CURLM *multi, curl_multi_timer_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, callback);
}

CURLcode kp_curl_easy_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode kp_curl_easy_get_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

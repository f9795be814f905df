#ifndef FLOWRUN_HTTP_H
#define FLOWRUN_HTTP_H

// http tasks' client: libcurl's multi interface on one thread of its own.

#include <stddef.h>
#include <stdint.h>

/// An `http:` task's response body, chunk by chunk, with the response's
/// status; on the HTTP thread.
typedef void (*flowrun_http_data_fn)(void *context, long status, const char *bytes, size_t count);
/// The request's end, exactly once, on the HTTP thread: the final status, or
/// 0 and what went wrong ("cancelled" after `flowrun_http_cancel`).
/// `out_of_descriptors`: nonzero when it failed for want of a descriptor
/// (EMFILE, ENFILE) — nothing was sent, and the task may wait and try again.
typedef void (*flowrun_http_done_fn)(void *context, long status, const char *error, int out_of_descriptors);

/// Starts one HTTP request (libcurl, loaded at the first call; one thread
/// drives every request). `headers`: "Name: value" lines; `body` may be NULL.
/// `connect_timeout_ms`: the limit until connected (TCP and TLS); the whole
/// request's limit is the caller's (a timer that cancels it).
/// Returns the request's id, or 0 with `*error` set (then no callback comes).
/// In C: libcurl's API is variadic (curl_easy_setopt), and libcurl is loaded with dlopen (flowrun_http.c says why).
uint64_t flowrun_http_start(const char *method, const char *url, const char *const *headers, size_t header_count,
                            const char *body, long long body_length, long connect_timeout_ms, void *context,
                            flowrun_http_data_fn on_data, flowrun_http_done_fn on_done, const char **error);

/// Stops request `id` if it is still going; its `on_done` follows with "cancelled".
/// In C: part of the HTTP client above.
void flowrun_http_cancel(uint64_t id);

#endif

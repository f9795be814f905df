// HTTP requests for `http:` tasks, on libcurl loaded with dlopen at the
// first request, driven by one thread for all requests (a curl multi handle).
//
// Why not FoundationNetworking's URLSession: linking it loads libcurl and
// some thirty libraries it needs (TLS, Kerberos, LDAP, …) into every flowrun
// process, ~11 ms of every start-up, `flowrun validate` included, whether
// the workflow has an http task or not. And URLSession's data task holds the
// whole body in memory; here each chunk goes to the task as it arrives.
//
// Why dlopen rather than linking libcurl: linked, libcurl and its TLS
// libraries would load into every flowrun process at start-up all the same;
// loaded at the first http task, they cost nothing to a run without one,
// and a binary built here runs where libcurl is missing until an http task
// needs it (it then fails with a message naming the package).
//
// libcurl's ABI is stable (soname libcurl.so.4 since 2006), so the types,
// option and info numbers come from its own header (curl/curl.h, from
// libcurl4-openssl-dev: the CCurl target), and the functions from dlopen.
#define _GNU_SOURCE
#define CURL_DISABLE_TYPECHECK 1
#include "flowrun_http.h"
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

// libcurl's entry points, typed by its header, resolved by `load`.
static struct {
    __typeof__(curl_global_init) *global_init;
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_multi_init) *multi_init;
    __typeof__(curl_multi_add_handle) *multi_add_handle;
    __typeof__(curl_multi_remove_handle) *multi_remove_handle;
    __typeof__(curl_multi_perform) *multi_perform;
    __typeof__(curl_multi_poll) *multi_poll;
    __typeof__(curl_multi_wakeup) *multi_wakeup;
    __typeof__(curl_multi_info_read) *multi_info_read;
} curl;

struct request {
    uint64_t id;
    CURL *easy;
    struct curl_slist *headers;
    void *context;
    flowrun_http_data_fn on_data;
    flowrun_http_done_fn on_done;
    int added;      // in the multi handle (loop thread only)
    int cancelled;  // atomic: read by the write callback without the lock
    long connect_timeout_ms;
    char message[128];  // the error the end callback reports, when flowrun words it
    int socket_errno;   // why libcurl got no socket (loop thread only); libcurl's OS errno stays 0 then
    struct request *next;
};

// Guards `requests`, `next_id` and loading; the multi handle itself is the
// loop thread's alone, except for curl_multi_wakeup, which is thread-safe.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct request *requests;
static uint64_t next_id = 1;
static CURLM *multi;
static int load_state;  // 0 not tried, 1 loaded, -1 failed
static char load_error[256];

static void unlink_request(struct request *request) {
    for (struct request **link = &requests; *link; link = &(*link)->next) {
        if (*link == request) {
            *link = request->next;
            return;
        }
    }
}

static void finish(struct request *request, long status, const char *error, int out_of_descriptors) {
    if (request->added) curl.multi_remove_handle(multi, request->easy);
    request->on_done(request->context, status, error, out_of_descriptors);
    curl.easy_cleanup(request->easy);
    curl.slist_free_all(request->headers);
    free(request);
}

static size_t write_body(char *bytes, size_t size, size_t count, void *userdata) {
    struct request *request = userdata;
    if (__atomic_load_n(&request->cancelled, __ATOMIC_RELAXED)) return 0;  // aborts the transfer
    long status = 0;
    curl.easy_getinfo(request->easy, CURLINFO_RESPONSE_CODE, &status);
    request->on_data(request->context, status, bytes, size * count);
    return size * count;
}

/// libcurl's socket, opened here to see why it could not be (EMFILE, ENFILE).
static curl_socket_t open_socket(void *userdata, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    struct request *request = userdata;
    // Close-on-exec: a task spawned meanwhile must not hold the connection.
    curl_socket_t opened = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (opened == CURL_SOCKET_BAD) request->socket_errno = errno;
    return opened;
}

static void *run_loop(void *unused) {
    (void)unused;
    for (;;) {
        // Start new requests; take cancelled ones out.
        struct request *stopped = NULL;
        pthread_mutex_lock(&lock);
        for (struct request *request = requests, *next; request; request = next) {
            next = request->next;
            if (__atomic_load_n(&request->cancelled, __ATOMIC_RELAXED)) {
                unlink_request(request);
                request->next = stopped;
                stopped = request;
            } else if (!request->added) {
                curl.multi_add_handle(multi, request->easy);
                request->added = 1;
            }
        }
        pthread_mutex_unlock(&lock);
        for (struct request *request = stopped, *next; request; request = next) {
            next = request->next;
            finish(request, 0, "cancelled", 0);
        }

        int running = 0;
        curl.multi_perform(multi, &running);
        CURLMsg *message;
        int left = 0;
        while ((message = curl.multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            struct request *request = NULL;
            long status = 0;
            curl.easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&request);
            curl.easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            CURLcode result = message->data.result;
            pthread_mutex_lock(&lock);
            unlink_request(request);
            pthread_mutex_unlock(&lock);
            const char *error = result == 0 ? NULL : curl.easy_strerror(result);
            if (result == CURLE_OPERATION_TIMEDOUT) {
                // The only limit libcurl is given is the connect one; the whole
                // request's is flowrun's timer, which cancels instead.
                snprintf(request->message, sizeof request->message,
                         "no connection within %.3gs (the connect limit of http tasks)", request->connect_timeout_ms / 1000.0);
                error = request->message;
            }
            // No socket (or no descriptor for libcurl's own) is "Couldn't connect to
            // server" to libcurl: told apart by the errno, so the task waits instead.
            long os_errno = 0;
            if (result != 0) curl.easy_getinfo(message->easy_handle, CURLINFO_OS_ERRNO, &os_errno);
            int short_of_descriptors = result != 0 && (request->socket_errno == EMFILE || request->socket_errno == ENFILE
                                                       || os_errno == EMFILE || os_errno == ENFILE);
            finish(request, result == 0 ? status : 0, error, short_of_descriptors);
        }
        curl.multi_poll(multi, NULL, 0, 1000, NULL);
    }
    return NULL;
}

#define RESOLVE(field, name)                                                       \
    if (!(*(void **)&curl.field = dlsym(library, name))) {                         \
        snprintf(load_error, sizeof load_error, "libcurl lacks %s (too old?)", name); \
        return 0;                                                                  \
    }

// With `lock` held.
static int load(void) {
    if (load_state) return load_state > 0;
    load_state = -1;
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!library) library = dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_error, sizeof load_error,
                 "http tasks need libcurl (libcurl.so.4, Debian/Ubuntu package libcurl4): %s", dlerror());
        return 0;
    }
    RESOLVE(global_init, "curl_global_init")
    RESOLVE(easy_init, "curl_easy_init")
    RESOLVE(easy_setopt, "curl_easy_setopt")
    RESOLVE(easy_getinfo, "curl_easy_getinfo")
    RESOLVE(easy_cleanup, "curl_easy_cleanup")
    RESOLVE(easy_strerror, "curl_easy_strerror")
    RESOLVE(slist_append, "curl_slist_append")
    RESOLVE(slist_free_all, "curl_slist_free_all")
    RESOLVE(multi_init, "curl_multi_init")
    RESOLVE(multi_add_handle, "curl_multi_add_handle")
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle")
    RESOLVE(multi_perform, "curl_multi_perform")
    RESOLVE(multi_poll, "curl_multi_poll")
    RESOLVE(multi_wakeup, "curl_multi_wakeup")
    RESOLVE(multi_info_read, "curl_multi_info_read")
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != 0 || !(multi = curl.multi_init())) {
        snprintf(load_error, sizeof load_error, "libcurl failed to initialise");
        return 0;
    }
    // The loop thread takes no signal: they are flowrun's main thread's and pump's business.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    int created = pthread_create(&thread, &attributes, run_loop, NULL);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (created != 0) {
        snprintf(load_error, sizeof load_error, "cannot start the http thread: %s", strerror(created));
        return 0;
    }
    load_state = 1;
    return 1;
}

uint64_t flowrun_http_start(const char *method, const char *url, const char *const *headers, size_t header_count,
                            const char *body, long long body_length, long connect_timeout_ms, void *context,
                            flowrun_http_data_fn on_data, flowrun_http_done_fn on_done, const char **error) {
    pthread_mutex_lock(&lock);
    if (!load()) {
        *error = load_error;
        pthread_mutex_unlock(&lock);
        return 0;
    }
    struct request *request = calloc(1, sizeof *request);
    CURL *easy = request ? curl.easy_init() : NULL;
    if (!easy) {
        free(request);
        *error = "out of memory";
        pthread_mutex_unlock(&lock);
        return 0;
    }
    request->easy = easy;
    request->context = context;
    request->on_data = on_data;
    request->on_done = on_done;
    for (size_t index = 0; index < header_count; index++) {
        request->headers = curl.slist_append(request->headers, headers[index]);
    }
    curl.easy_setopt(easy, CURLOPT_URL, url);
    curl.easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    request->connect_timeout_ms = connect_timeout_ms;
    curl.easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl.easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl.easy_setopt(easy, CURLOPT_MAXREDIRS, 16L);
    curl.easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");        // ignored by libcurl < 7.85
    curl.easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(easy, CURLOPT_USERAGENT, "flowrun");
    curl.easy_setopt(easy, CURLOPT_WRITEFUNCTION, write_body);
    curl.easy_setopt(easy, CURLOPT_WRITEDATA, request);
    curl.easy_setopt(easy, CURLOPT_PRIVATE, request);
    curl.easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl.easy_setopt(easy, CURLOPT_OPENSOCKETDATA, request);
    if (request->headers) curl.easy_setopt(easy, CURLOPT_HTTPHEADER, request->headers);
    if (body) {
        curl.easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, body_length);
        curl.easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, body);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl.easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else {
        curl.easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    }
    request->id = next_id++;
    request->next = requests;
    requests = request;
    uint64_t id = request->id;
    pthread_mutex_unlock(&lock);
    curl.multi_wakeup(multi);
    return id;
}

void flowrun_http_cancel(uint64_t id) {
    pthread_mutex_lock(&lock);
    int found = 0;
    for (struct request *request = requests; request; request = request->next) {
        if (request->id == id) {
            __atomic_store_n(&request->cancelled, 1, __ATOMIC_RELAXED);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (found) curl.multi_wakeup(multi);
}

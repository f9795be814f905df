// HTTP requests for `http:` tasks, on libcurl loaded with dlopen at the
// first request, driven by one thread for all requests (a curl multi handle).
//
// Why not FoundationNetworking's URLSession: linking it loads libcurl and
// some thirty libraries it needs (TLS, Kerberos, LDAP, …) into every flowrun
// process, ~11 ms of every start-up, `flowrun validate` included, whether
// the workflow has an http task or not. And URLSession's data task holds the
// whole body in memory; here each chunk goes to the task as it arrives.
//
// libcurl's ABI is stable (soname libcurl.so.4 since 2006): the few option
// and info numbers below are curl/curl.h's, which is not installed here.
#define _GNU_SOURCE
#include "flowrun_system.h"
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void CURL;
typedef void CURLM;
struct curl_slist;
typedef struct {
    int msg;
    CURL *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
} CURLMsg;

enum {
    OPT_WRITEDATA = 10001,
    OPT_URL = 10002,
    OPT_USERAGENT = 10018,
    OPT_HTTPHEADER = 10023,
    OPT_CUSTOMREQUEST = 10036,
    OPT_NOBODY = 44,
    OPT_FOLLOWLOCATION = 52,
    OPT_MAXREDIRS = 68,
    OPT_NOSIGNAL = 99,
    OPT_PRIVATE = 10103,
    OPT_COPYPOSTFIELDS = 10165,
    OPT_PROTOCOLS_STR = 10318,
    OPT_REDIR_PROTOCOLS_STR = 10319,
    OPT_WRITEFUNCTION = 20011,
    OPT_POSTFIELDSIZE_LARGE = 30120,
    OPT_CONNECTTIMEOUT_MS = 156,  // CURLOPTTYPE_LONG + 156
    ERROR_OPERATION_TIMEDOUT = 28,  // CURLE_OPERATION_TIMEDOUT
    INFO_PRIVATE = 0x100000 + 21,
    INFO_RESPONSE_CODE = 0x200000 + 2,
    MSG_DONE = 1,
    GLOBAL_DEFAULT = 3,
};

static struct {
    int (*global_init)(long flags);
    CURL *(*easy_init)(void);
    int (*easy_setopt)(CURL *handle, int option, ...);
    int (*easy_getinfo)(CURL *handle, int info, ...);
    void (*easy_cleanup)(CURL *handle);
    const char *(*easy_strerror)(int code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
    void (*slist_free_all)(struct curl_slist *list);
    CURLM *(*multi_init)(void);
    int (*multi_add_handle)(CURLM *multi, CURL *handle);
    int (*multi_remove_handle)(CURLM *multi, CURL *handle);
    int (*multi_perform)(CURLM *multi, int *running);
    int (*multi_poll)(CURLM *multi, void *extra, unsigned count, int timeout, int *ready);
    int (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *left);
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

static void finish(struct request *request, long status, const char *error) {
    if (request->added) curl.multi_remove_handle(multi, request->easy);
    request->on_done(request->context, status, error);
    curl.easy_cleanup(request->easy);
    curl.slist_free_all(request->headers);
    free(request);
}

static size_t write_body(char *bytes, size_t size, size_t count, void *userdata) {
    struct request *request = userdata;
    if (__atomic_load_n(&request->cancelled, __ATOMIC_RELAXED)) return 0;  // aborts the transfer
    long status = 0;
    curl.easy_getinfo(request->easy, INFO_RESPONSE_CODE, &status);
    request->on_data(request->context, status, bytes, size * count);
    return size * count;
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
            finish(request, 0, "cancelled");
        }

        int running = 0;
        curl.multi_perform(multi, &running);
        CURLMsg *message;
        int left = 0;
        while ((message = curl.multi_info_read(multi, &left))) {
            if (message->msg != MSG_DONE) continue;
            struct request *request = NULL;
            long status = 0;
            curl.easy_getinfo(message->easy_handle, INFO_PRIVATE, (char **)&request);
            curl.easy_getinfo(message->easy_handle, INFO_RESPONSE_CODE, &status);
            int result = message->data.result;
            pthread_mutex_lock(&lock);
            unlink_request(request);
            pthread_mutex_unlock(&lock);
            const char *error = result == 0 ? NULL : curl.easy_strerror(result);
            if (result == ERROR_OPERATION_TIMEDOUT) {
                // The only limit libcurl is given is the connect one; the whole
                // request's is flowrun's timer, which cancels instead.
                snprintf(request->message, sizeof request->message,
                         "no connection within %.3gs (the connect limit of http tasks)", request->connect_timeout_ms / 1000.0);
                error = request->message;
            }
            finish(request, result == 0 ? status : 0, error);
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
    if (curl.global_init(GLOBAL_DEFAULT) != 0 || !(multi = curl.multi_init())) {
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
    curl.easy_setopt(easy, OPT_URL, url);
    curl.easy_setopt(easy, OPT_NOSIGNAL, 1L);
    request->connect_timeout_ms = connect_timeout_ms;
    curl.easy_setopt(easy, OPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    curl.easy_setopt(easy, OPT_FOLLOWLOCATION, 1L);
    curl.easy_setopt(easy, OPT_MAXREDIRS, 16L);
    curl.easy_setopt(easy, OPT_PROTOCOLS_STR, "http,https");        // ignored by libcurl < 7.85
    curl.easy_setopt(easy, OPT_REDIR_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(easy, OPT_USERAGENT, "flowrun");
    curl.easy_setopt(easy, OPT_WRITEFUNCTION, write_body);
    curl.easy_setopt(easy, OPT_WRITEDATA, request);
    curl.easy_setopt(easy, OPT_PRIVATE, request);
    if (request->headers) curl.easy_setopt(easy, OPT_HTTPHEADER, request->headers);
    if (body) {
        curl.easy_setopt(easy, OPT_POSTFIELDSIZE_LARGE, body_length);
        curl.easy_setopt(easy, OPT_COPYPOSTFIELDS, body);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl.easy_setopt(easy, OPT_NOBODY, 1L);
    } else {
        curl.easy_setopt(easy, OPT_CUSTOMREQUEST, method);
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

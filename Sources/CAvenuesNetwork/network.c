#include "CAvenuesNetwork.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// MARK: libcurl

typedef void *(*easy_init_f)(void);
typedef void (*easy_cleanup_f)(void *);
typedef int (*easy_setopt_f)(void *, int, ...);
typedef int (*easy_getinfo_f)(void *, int, ...);
typedef const char *(*easy_strerror_f)(int);
typedef void *(*multi_init_f)(void);
typedef int (*multi_cleanup_f)(void *);
typedef int (*multi_setopt_f)(void *, int, ...);
typedef int (*multi_handle_f)(void *, void *);
typedef int (*multi_perform_f)(void *, int *);
typedef int (*multi_poll_f)(void *, void *, unsigned int, int, int *);
typedef int (*multi_wakeup_f)(void *);
typedef void *(*multi_info_read_f)(void *, int *);
typedef void *(*slist_append_f)(void *, const char *);
typedef void (*slist_free_all_f)(void *);
typedef int (*global_init_f)(long);
typedef const char *(*version_f)(void);

// libcurl's CURLMsg (curl.h): a message kind, the handle, and a union whose first member is what
// a CURLMSG_DONE message carries, its result.
typedef struct {
    int msg;
    void *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
} curl_message;

static struct {
    easy_init_f easy_init;
    easy_cleanup_f easy_cleanup;
    easy_setopt_f easy_setopt;
    easy_getinfo_f easy_getinfo;
    easy_strerror_f easy_strerror;
    multi_init_f multi_init;
    multi_cleanup_f multi_cleanup;
    multi_setopt_f multi_setopt;
    multi_handle_f multi_add_handle;
    multi_handle_f multi_remove_handle;
    multi_perform_f multi_perform;
    multi_poll_f multi_poll;
    multi_wakeup_f multi_wakeup;
    multi_info_read_f multi_info_read;
    slist_append_f slist_append;
    slist_free_all_f slist_free_all;
    version_f version;
} curl;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_status = -1;
static char curl_error[512] = "libcurl was not loaded";

// MARK: exit

// A process that calls exit() while a transfer runs tears its libraries down (OpenSSL's atexit
// clean-up, every library's destructors) under a thread still inside them: seen 2026-11-26 as
// SIGSEGV in libcrypto or memcpy on the curl thread in 5 of 60 exits during a list of https
// downloads. So each curl thread passes a gate between steps; at exit the gate closes, the polls
// are woken, and exit waits until every such thread is asleep at the gate.
static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t exit_cond = PTHREAD_COND_INITIALIZER;
// Written under exit_lock; read without it by the checkpoint the curl thread passes every step.
static atomic_int exiting = 0;
static int threads_inside = 0;
static __thread int this_thread_inside = 0;
static void **multis = NULL;  // the multi handles in use, woken at exit
static size_t multi_count = 0, multi_capacity = 0;
static atomic_ulong perform_count = 0;
static atomic_ulong exit_waits_given_up = 0;

static void sleep_for_ever(void) {
    for (;;) pause();
}

void avenues_curl_thread_enter(void) {
    pthread_mutex_lock(&exit_lock);
    if (exiting) {
        pthread_mutex_unlock(&exit_lock);
        sleep_for_ever();
    }
    threads_inside += 1;
    this_thread_inside = 1;
    pthread_mutex_unlock(&exit_lock);
}

void avenues_curl_thread_leave(void) {
    pthread_mutex_lock(&exit_lock);
    if (this_thread_inside) {
        threads_inside -= 1;
        this_thread_inside = 0;
    }
    if (exiting) pthread_cond_broadcast(&exit_cond);
    pthread_mutex_unlock(&exit_lock);
}

void avenues_curl_thread_checkpoint(void) {
    // A load, not the lock: exit() that begins just after is waited for at the next step or poll.
    if (!atomic_load_explicit(&exiting, memory_order_acquire)) return;
    avenues_curl_thread_leave();
    sleep_for_ever();
}

unsigned long avenues_curl_perform_count(void) { return atomic_load(&perform_count); }
unsigned long avenues_curl_exit_waits_given_up(void) { return atomic_load(&exit_waits_given_up); }

static void remember_multi(void *multi) {
    pthread_mutex_lock(&exit_lock);
    if (multi_count == multi_capacity) {
        size_t capacity = multi_capacity == 0 ? 8 : multi_capacity * 2;
        void **grown = realloc(multis, capacity * sizeof(void *));
        if (grown == NULL) {  // not woken at exit: its poll ends within its timeout (1 s)
            pthread_mutex_unlock(&exit_lock);
            return;
        }
        multis = grown;
        multi_capacity = capacity;
    }
    multis[multi_count++] = multi;
    pthread_mutex_unlock(&exit_lock);
}

static void forget_multi(void *multi) {
    pthread_mutex_lock(&exit_lock);
    for (size_t index = 0; index < multi_count; index++) {
        if (multis[index] == multi) {
            multis[index] = multis[--multi_count];
            break;
        }
    }
    pthread_mutex_unlock(&exit_lock);
}

static void close_gate_at_exit(void) {
    pthread_mutex_lock(&exit_lock);
    atomic_store_explicit(&exiting, 1, memory_order_release);
    // Under the lock, so no handle is cleaned up meanwhile (forget_multi waits for it);
    // curl_multi_wakeup may be called from any thread.
    for (size_t index = 0; index < multi_count; index++) curl.multi_wakeup(multis[index]);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    // A thread that calls exit() from inside a transfer (a sink's code) does not wait for itself.
    while (threads_inside - this_thread_inside > 0) {
        if (pthread_cond_timedwait(&exit_cond, &exit_lock, &deadline) == ETIMEDOUT) {
            atomic_fetch_add(&exit_waits_given_up, 1);
            break;
        }
    }
    pthread_mutex_unlock(&exit_lock);
}

// fork(): the child has only the thread that forked. Without this it counted the parent's curl
// threads as inside (so its exit waited the whole second for threads it does not have), woke the
// parent's multi handles, and could inherit the lock held.
static void before_fork(void) { pthread_mutex_lock(&exit_lock); }
static void after_fork_in_parent(void) { pthread_mutex_unlock(&exit_lock); }
static void after_fork_in_child(void) {
    threads_inside = 0;
    this_thread_inside = 0;
    multi_count = 0;
    pthread_mutex_unlock(&exit_lock);
}

static void *open_first(const char *const *names) {
    for (const char *const *name = names; *name != NULL; name++) {
        void *library = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (library != NULL) return library;
    }
    return NULL;
}

#define FIND(library, field, symbol)                                                       \
    do {                                                                                   \
        *(void **)(&curl.field) = dlsym(library, symbol);                                  \
        if (curl.field == NULL) {                                                          \
            strncpy(curl_error, "libcurl is too old: it has no " symbol, sizeof curl_error - 1); \
            return;                                                                        \
        }                                                                                  \
    } while (0)

static void load_curl(void) {
    static const char *const names[] = {"libcurl.so.4", "libcurl.so", "libcurl.4.dylib", "libcurl.dylib", NULL};
    void *library = open_first(names);
    if (library == NULL) {
        const char *reason = dlerror();
        strncpy(curl_error, reason != NULL ? reason : "libcurl.so.4 was not found", sizeof curl_error - 1);
        return;
    }
    global_init_f global_init = (global_init_f)dlsym(library, "curl_global_init");
    if (global_init == NULL) {
        strncpy(curl_error, "libcurl has no curl_global_init", sizeof curl_error - 1);
        return;
    }
    FIND(library, easy_init, "curl_easy_init");
    FIND(library, easy_cleanup, "curl_easy_cleanup");
    FIND(library, easy_setopt, "curl_easy_setopt");
    FIND(library, easy_getinfo, "curl_easy_getinfo");
    FIND(library, easy_strerror, "curl_easy_strerror");
    FIND(library, multi_init, "curl_multi_init");
    FIND(library, multi_cleanup, "curl_multi_cleanup");
    FIND(library, multi_setopt, "curl_multi_setopt");
    FIND(library, multi_add_handle, "curl_multi_add_handle");
    FIND(library, multi_remove_handle, "curl_multi_remove_handle");
    FIND(library, multi_perform, "curl_multi_perform");
    FIND(library, multi_poll, "curl_multi_poll");        // 7.66
    FIND(library, multi_wakeup, "curl_multi_wakeup");    // 7.68
    FIND(library, multi_info_read, "curl_multi_info_read");
    FIND(library, slist_append, "curl_slist_append");
    FIND(library, slist_free_all, "curl_slist_free_all");
    FIND(library, version, "curl_version");
    if (global_init(3 /* CURL_GLOBAL_DEFAULT */) != 0) {
        strncpy(curl_error, "curl_global_init failed", sizeof curl_error - 1);
        return;
    }
    // After curl_global_init, which sets up the TLS library and its own atexit clean-up:
    // handlers run last registered first, so the gate closes before that clean-up.
    atexit(close_gate_at_exit);
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    curl_status = 0;
}

int avenues_curl_load(void) {
    pthread_once(&curl_once, load_curl);
    return curl_status;
}

const char *avenues_curl_load_error(void) { return curl_error; }

const char *avenues_curl_version(void) { return avenues_curl_load() == 0 ? curl.version() : ""; }

void *avenues_curl_easy_init(void) { return avenues_curl_load() == 0 ? curl.easy_init() : NULL; }
void avenues_curl_easy_cleanup(void *easy) { curl.easy_cleanup(easy); }
int avenues_curl_easy_setopt_long(void *easy, int option, long value) { return curl.easy_setopt(easy, option, value); }
int avenues_curl_easy_setopt_pointer(void *easy, int option, const void *value) { return curl.easy_setopt(easy, option, value); }
int avenues_curl_easy_setopt_callback(void *easy, int option, avenues_curl_data_callback callback) {
    return curl.easy_setopt(easy, option, callback);
}
int avenues_curl_easy_getinfo_long(void *easy, int info, long *value) { return curl.easy_getinfo(easy, info, value); }
const char *avenues_curl_easy_strerror(int code) { return avenues_curl_load() == 0 ? curl.easy_strerror(code) : curl_error; }

void *avenues_curl_multi_init(void) {
    if (avenues_curl_load() != 0) return NULL;
    void *multi = curl.multi_init();
    if (multi != NULL) remember_multi(multi);
    return multi;
}
void avenues_curl_multi_cleanup(void *multi) {
    forget_multi(multi);
    curl.multi_cleanup(multi);
}
int avenues_curl_multi_setopt_long(void *multi, int option, long value) { return curl.multi_setopt(multi, option, value); }
int avenues_curl_multi_add_handle(void *multi, void *easy) { return curl.multi_add_handle(multi, easy); }
int avenues_curl_multi_remove_handle(void *multi, void *easy) { return curl.multi_remove_handle(multi, easy); }
int avenues_curl_multi_perform(void *multi, int *running) {
    atomic_fetch_add_explicit(&perform_count, 1, memory_order_relaxed);
    return curl.multi_perform(multi, running);
}
int avenues_curl_multi_poll(void *multi, int timeout_milliseconds, int *descriptors) {
    return curl.multi_poll(multi, NULL, 0, timeout_milliseconds, descriptors);
}
int avenues_curl_multi_wakeup(void *multi) { return curl.multi_wakeup(multi); }

int avenues_curl_multi_next_done(void *multi, void **easy, int *result) {
    int left = 0;
    curl_message *message;
    while ((message = (curl_message *)curl.multi_info_read(multi, &left)) != NULL) {
        if (message->msg == 1 /* CURLMSG_DONE */) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

void *avenues_curl_slist_append(void *list, const char *text) { return curl.slist_append(list, text); }
void avenues_curl_slist_free_all(void *list) { curl.slist_free_all(list); }

// MARK: zlib

// zlib's z_stream (zlib.h), unchanged since zlib 1.0.
typedef struct {
    const uint8_t *next_in;
    unsigned int avail_in;
    unsigned long total_in;
    uint8_t *next_out;
    unsigned int avail_out;
    unsigned long total_out;
    const char *msg;
    void *state;
    void *zalloc;
    void *zfree;
    void *opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} z_stream;

typedef int (*inflate_init2_f)(z_stream *, int, const char *, int);
typedef int (*inflate_f)(z_stream *, int);
typedef int (*inflate_end_f)(z_stream *);
typedef int (*inflate_reset_f)(z_stream *);

static struct {
    inflate_init2_f init2;
    inflate_f inflate;
    inflate_end_f end;
    inflate_reset_f reset;
} zlib;

static pthread_once_t zlib_once = PTHREAD_ONCE_INIT;
static int zlib_status = -1;

static void load_zlib(void) {
    static const char *const names[] = {"libz.so.1", "libz.so", "libz.1.dylib", "libz.dylib", NULL};
    void *library = open_first(names);
    if (library == NULL) return;
    *(void **)(&zlib.init2) = dlsym(library, "inflateInit2_");
    *(void **)(&zlib.inflate) = dlsym(library, "inflate");
    *(void **)(&zlib.end) = dlsym(library, "inflateEnd");
    *(void **)(&zlib.reset) = dlsym(library, "inflateReset");
    if (zlib.init2 && zlib.inflate && zlib.end && zlib.reset) zlib_status = 0;
}

int avenues_zlib_load(void) {
    pthread_once(&zlib_once, load_zlib);
    return zlib_status;
}

void *avenues_inflate_open(int window_bits) {
    if (avenues_zlib_load() != 0) return NULL;
    z_stream *stream = calloc(1, sizeof(z_stream));
    if (stream == NULL) return NULL;
    // zlib checks only the major version and the struct's size.
    if (zlib.init2(stream, window_bits, "1.2.13", (int)sizeof(z_stream)) != 0) {
        free(stream);
        return NULL;
    }
    return stream;
}

int avenues_inflate(void *opaque, const uint8_t *input, size_t input_count, size_t *used,
                    uint8_t *output, size_t output_count, size_t *made) {
    z_stream *stream = opaque;
    // zlib counts in unsigned int: larger buffers are taken in parts by the caller.
    unsigned int in = input_count > 0x40000000u ? 0x40000000u : (unsigned int)input_count;
    unsigned int out = output_count > 0x40000000u ? 0x40000000u : (unsigned int)output_count;
    stream->next_in = input;
    stream->avail_in = in;
    stream->next_out = output;
    stream->avail_out = out;
    int status = zlib.inflate(stream, 0 /* Z_NO_FLUSH */);
    *used = in - stream->avail_in;
    *made = out - stream->avail_out;
    return status;
}

int avenues_inflate_reset(void *stream) { return zlib.reset(stream); }

void avenues_inflate_close(void *stream) {
    if (stream == NULL) return;
    zlib.end(stream);
    free(stream);
}

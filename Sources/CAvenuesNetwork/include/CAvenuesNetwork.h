// libcurl and zlib, loaded at run time (dlopen) so that the Avenues library builds without their
// headers and links against nothing: the few functions used are declared here with the types of
// their stable C ABIs (libcurl's since 7.x, zlib's since 1.x), and called through pointers found
// with dlsym. curl_easy_setopt and curl_multi_setopt are variadic; C calls them for Swift.
#ifndef AVENUES_NETWORK_H
#define AVENUES_NETWORK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// libcurl's data callbacks: `count` items of `size` bytes at `data`; return the bytes used.
typedef size_t (*avenues_curl_data_callback)(char *data, size_t size, size_t count, void *context);

/// Loads libcurl once (later calls return the first answer): 0 when it is usable, else -1, with
/// the reason in avenues_curl_load_error().
int avenues_curl_load(void);
const char *avenues_curl_load_error(void);
/// libcurl's version text ("libcurl/7.88.1 OpenSSL/3.0.19 …"), or "" when it is not loaded.
const char *avenues_curl_version(void);

void *avenues_curl_easy_init(void);
void avenues_curl_easy_cleanup(void *easy);
int avenues_curl_easy_setopt_long(void *easy, int option, long value);
int avenues_curl_easy_setopt_pointer(void *easy, int option, const void *value);
int avenues_curl_easy_setopt_callback(void *easy, int option, avenues_curl_data_callback callback);
int avenues_curl_easy_getinfo_long(void *easy, int info, long *value);
const char *avenues_curl_easy_strerror(int code);

void *avenues_curl_multi_init(void);
void avenues_curl_multi_cleanup(void *multi);
int avenues_curl_multi_setopt_long(void *multi, int option, long value);
int avenues_curl_multi_add_handle(void *multi, void *easy);
int avenues_curl_multi_remove_handle(void *multi, void *easy);
int avenues_curl_multi_perform(void *multi, int *running);
int avenues_curl_multi_poll(void *multi, int timeout_milliseconds, int *descriptors);
int avenues_curl_multi_wakeup(void *multi);
/// The next finished transfer of `multi`: 1 with its handle and result, or 0 when there is none.
int avenues_curl_multi_next_done(void *multi, void **easy, int *result);

/// The process is exiting: a thread that runs transfers must stop touching libcurl before the
/// libraries' clean-up (OpenSSL's, Foundation's) frees what it uses. Such a thread calls
/// avenues_curl_thread_enter() when it starts (and after sleeping outside libcurl),
/// avenues_curl_thread_leave() before such a sleep and when it ends, and
/// avenues_curl_thread_checkpoint() between steps: once exit() has begun, enter and checkpoint
/// never return (the thread sleeps until the process is gone). A handler registered with atexit
/// once libcurl is loaded wakes every multi handle in use and waits, at most a second, for every
/// such thread to be asleep or gone.
void avenues_curl_thread_enter(void);
void avenues_curl_thread_leave(void);
void avenues_curl_thread_checkpoint(void);
/// How many times curl_multi_perform ran in this process (for the exit test).
unsigned long avenues_curl_perform_count(void);
/// How many times exit() stopped waiting for a curl thread after its second (for the fork test).
/// A forked child starts with none of the parent's threads counted.
unsigned long avenues_curl_exit_waits_given_up(void);

void *avenues_curl_slist_append(void *list, const char *text);
void avenues_curl_slist_free_all(void *list);

/// Loads zlib once: 0 when it is usable, else -1.
int avenues_zlib_load(void);

/// An inflating stream (gzip, zlib or raw deflate), or NULL if zlib is missing or out of memory.
/// `window_bits` as zlib's inflateInit2: 15 + 16 for gzip, 15 for zlib, -15 for raw deflate.
void *avenues_inflate_open(int window_bits);
/// Inflates from `input`: returns zlib's status (0 Z_OK, 1 Z_STREAM_END, negative on error) and
/// sets how much input was used and how much output was made.
int avenues_inflate(void *stream, const uint8_t *input, size_t input_count, size_t *used,
                    uint8_t *output, size_t output_count, size_t *made);
/// Starts the stream over (the next gzip member of a multi-member body).
int avenues_inflate_reset(void *stream);
void avenues_inflate_close(void *stream);

#ifdef __cplusplus
}
#endif

#endif

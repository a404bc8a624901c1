#include "system_io.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static int closed_at_start = 0;

// Runs before main, and so before the Swift runtime and libdispatch open their own descriptors:
// started with standard output closed (`tool >&-`), the first file opened took number 1 (an
// eventfd of libdispatch, seen as "Invalid argument"; a spool or a database would have received
// the tool's output). Each closed one gets /dev/null, which holds its number.
__attribute__((constructor)) static void reserve_standard_descriptors(void) {
    for (int descriptor = 0; descriptor <= 2; descriptor++) {
        if (fcntl(descriptor, F_GETFD) != -1 || errno != EBADF) continue;
        closed_at_start |= 1 << descriptor;
        // The lowest free number: this one, as the lower ones are open by now.
        int opened = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY);
        if (opened >= 0 && opened != descriptor) {
            dup2(opened, descriptor);
            close(opened);
        }
    }
}

int avenues_examples_closed_standard_descriptors(void) {
    return closed_at_start;
}

ssize_t avenues_examples_read(int descriptor, void *buffer, size_t count) {
    ssize_t result;
    do {
        result = read(descriptor, buffer, count);
    } while (result < 0 && errno == EINTR);
    return result;
}

int avenues_examples_write_all(int descriptor, const void *bytes, size_t count) {
    const char *next = bytes;
    while (count > 0) {
        ssize_t written = write(descriptor, next, count);
        if (written < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (written == 0) return EIO;
        next += written;
        count -= (size_t)written;
    }
    return 0;
}

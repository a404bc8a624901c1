#ifndef AVENUES_EXAMPLES_SYSTEM_IO_H
#define AVENUES_EXAMPLES_SYSTEM_IO_H

#include <sys/types.h>

/// Which of descriptors 0, 1 and 2 were closed when the process started (bit n: descriptor n),
/// before anything else could open a file under their number. Each was given /dev/null then.
int avenues_examples_closed_standard_descriptors(void);

/// read(2), again after a signal: the count read (0 at the end), or -1 with errno set.
ssize_t avenues_examples_read(int descriptor, void *buffer, size_t count);

/// Writes all `count` bytes to `descriptor`, again after a signal and after a partial write:
/// 0, or the errno of the write that failed.
int avenues_examples_write_all(int descriptor, const void *bytes, size_t count);

#endif

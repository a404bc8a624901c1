#ifndef AVENUES_EXAMPLES_SYSTEM_IO_H
#define AVENUES_EXAMPLES_SYSTEM_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Which of descriptors 0, 1 and 2 were closed when the process started (bit n: descriptor n),
/// before anything else could open a file under their number. Each was given /dev/null then.
int avenues_examples_closed_standard_descriptors(void);

/// read(2), again after a signal: the count read (0 at the end), or -1 with errno set.
ssize_t avenues_examples_read(int descriptor, void *buffer, size_t count);

/// Writes all `count` bytes to `descriptor`, again after a signal and after a partial write:
/// 0, or the errno of the write that failed.
int avenues_examples_write_all(int descriptor, const void *bytes, size_t count);

/// Whether avenues_examples_crc32_fold runs here: an x86-64 processor with PCLMULQDQ and SSE4.1.
int avenues_examples_crc32_fold_available(void);

/// The CRC-32 register (zlib's polynomial, reflected, kept inverted: 0xFFFFFFFF before any byte)
/// after `count` more bytes, folded with carry-less multiplication. `count` must be a multiple of 16
/// and at least 64; call it only where avenues_examples_crc32_fold_available() says so.
uint32_t avenues_examples_crc32_fold(uint32_t reg, const void *bytes, size_t count);

/// How many of the `count` bytes are newlines (0x0A).
size_t avenues_examples_count_newlines(const void *bytes, size_t count);

#endif

// Byte scans the summaries make over every byte of a file: its CRC-32 and its newlines. In C for
// the processor's vector instructions, which Swift does not reach: the Swift CRC (slicing by 8)
// took 64 % of a 2 GiB summary and the newline count 22 %.
#include "system_io.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

int avenues_examples_crc32_fold_available(void) {
    // 0: not asked yet; 1: no; 2: yes. Asked once (CPUID is slow in a virtual machine).
    static _Atomic int known = 0;
    int answer = atomic_load_explicit(&known, memory_order_relaxed);
    if (answer == 0) {
        unsigned int a = 0, b = 0, c = 0, d = 0;
        int pclmul = 0, sse41 = 0;
        if (__get_cpuid(1, &a, &b, &c, &d)) {
            pclmul = (c & bit_PCLMUL) != 0;
            sse41 = (c & bit_SSE4_1) != 0;
        }
        answer = pclmul && sse41 ? 2 : 1;
        atomic_store_explicit(&known, answer, memory_order_relaxed);
    }
    return answer == 2;
}

// Folding with carry-less multiplication (Intel, "Fast CRC Computation for Generic Polynomials
// Using PCLMULQDQ", 2009), for the reflected polynomial 0xEDB88320. Each constant is x^n mod P(x)
// for the distance it folds across, bit-reflected into 33 bits: four blocks of 16 bytes are folded
// 64 bytes forward at a time, then into one, then 128 bits to 64, 64 to 32, and Barrett reduction.
__attribute__((target("pclmul,sse4.1")))
uint32_t avenues_examples_crc32_fold(uint32_t reg, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    const __m128i fold4 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // x^(512+32), x^(512-32)
    const __m128i fold1 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  // x^(128+32), x^(128-32)
    const __m128i fold64 = _mm_set_epi64x(0, 0x163cd6124);            // x^64
    const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641); // floor(x^64 / P), P
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);

    __m128i x0 = _mm_loadu_si128((const __m128i *)(p + 0));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)reg));
    p += 64;
    count -= 64;
    while (count >= 64) {
        __m128i h0 = _mm_clmulepi64_si128(x0, fold4, 0x11), l0 = _mm_clmulepi64_si128(x0, fold4, 0x00);
        __m128i h1 = _mm_clmulepi64_si128(x1, fold4, 0x11), l1 = _mm_clmulepi64_si128(x1, fold4, 0x00);
        __m128i h2 = _mm_clmulepi64_si128(x2, fold4, 0x11), l2 = _mm_clmulepi64_si128(x2, fold4, 0x00);
        __m128i h3 = _mm_clmulepi64_si128(x3, fold4, 0x11), l3 = _mm_clmulepi64_si128(x3, fold4, 0x00);
        x0 = _mm_xor_si128(_mm_xor_si128(h0, l0), _mm_loadu_si128((const __m128i *)(p + 0)));
        x1 = _mm_xor_si128(_mm_xor_si128(h1, l1), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(_mm_xor_si128(h2, l2), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(_mm_xor_si128(h3, l3), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        count -= 64;
    }
    // Four into one, then any 16-byte blocks left.
    __m128i x = x0;
    __m128i next[3] = {x1, x2, x3};
    for (int i = 0; i < 3; i++) {
        x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, fold1, 0x11), _mm_clmulepi64_si128(x, fold1, 0x00)), next[i]);
    }
    while (count >= 16) {
        __m128i block = _mm_loadu_si128((const __m128i *)p);
        x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, fold1, 0x11), _mm_clmulepi64_si128(x, fold1, 0x00)), block);
        p += 16;
        count -= 16;
    }
    // 128 bits to 64: the low half times x^(128-32)... (the high constant of fold1), added to the high half.
    x = _mm_xor_si128(_mm_clmulepi64_si128(x, fold1, 0x10), _mm_srli_si128(x, 8));
    // 64 bits to 32.
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), fold64, 0x00), _mm_srli_si128(x, 4));
    // Barrett reduction: the remainder of the 64 bits left by P.
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, t), 1);
}

size_t avenues_examples_count_newlines(const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    const __m128i newline = _mm_set1_epi8('\n');
    size_t total = 0;
    while (count >= 16) {
        // Each byte lane counts up to 255 matches (0xFF per match subtracted), then the lanes are
        // summed into two 64-bit halves.
        size_t blocks = count / 16 < 255 ? count / 16 : 255;
        __m128i lanes = _mm_setzero_si128();
        for (size_t i = 0; i < blocks; i++) {
            lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), newline));
            p += 16;
        }
        __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
        total += (size_t)_mm_cvtsi128_si64(sums) + (size_t)_mm_extract_epi64(sums, 1);
        count -= blocks * 16;
    }
    for (size_t i = 0; i < count; i++) total += p[i] == '\n';
    return total;
}

#else

int avenues_examples_crc32_fold_available(void) {
    return 0;
}

uint32_t avenues_examples_crc32_fold(uint32_t reg, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return reg;  // never called: not available
}

size_t avenues_examples_count_newlines(const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    size_t total = 0;
    for (size_t i = 0; i < count; i++) total += p[i] == '\n';  // vectorized by the compiler
    return total;
}

#endif

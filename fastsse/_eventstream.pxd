# cython: language_level=3
"""Framing: bytes -> frames, by the AWS event stream encoding (``application/vnd.amazon.eventstream``).

Each frame: a 12-byte prelude (total length, headers length, the CRC32 of those 8 bytes), its
headers, its payload, and the CRC32 of all of it; see the Python twin, ``_eventstream_py``, for
the rules.  The arithmetic (CRC32, the headers, base64) is C, in ``_eventstream.h``; the scanner
(``_scanner``) reads frames where they lie in a chunk, or gathers one split across chunks.
Declarations only.
"""

from libc.stdint cimport uint32_t

cdef extern from "_eventstream.h":
    ctypedef struct Span "FastsseSpan":
        const unsigned char* p  # NULL: absent
        Py_ssize_t n
    ctypedef struct HeadersKept "FastsseHeadersKept":  # the last headers block read, and its values
        Py_ssize_t n
    cdef enum:
        H_MESSAGE_TYPE "FASTSSE_H_MESSAGE_TYPE"
        H_EVENT_TYPE "FASTSSE_H_EVENT_TYPE"
        H_EXCEPTION_TYPE "FASTSSE_H_EXCEPTION_TYPE"
        H_ERROR_CODE "FASTSSE_H_ERROR_CODE"
        N_HEADERS "FASTSSE_N_HEADERS"
    void eventstream_init "fastsse_eventstream_init"() noexcept
    uint32_t crc32 "fastsse_crc32"(uint32_t crc, const unsigned char* p, size_t n) noexcept nogil  # zlib's
    uint32_t be32 "fastsse_be32"(const unsigned char* p) noexcept nogil
    int read_headers "fastsse_headers_kept"(HeadersKept* kept, const unsigned char* h, Py_ssize_t n,
                                            Span* found) noexcept nogil
    Py_ssize_t base64_decode "fastsse_base64_decode"(const unsigned char* s, Py_ssize_t n,
                                                     unsigned char* out) noexcept nogil
    int base64_widest "fastsse_base64_widest"  # 2: AVX2 blocks where the CPU has them, 1: SSSE3, 0: none

cdef enum:
    PRELUDE_BYTES = 12
    CRC_BYTES = 4
    MIN_FRAME_BYTES = 16

// memmem for the secret masker: glibc's finds a 20-byte needle in text at
// 7-18 GB/s here, against 1.5-3 GB/s for memchr on the first byte plus a
// compare (base64 output holds a given first byte once in 64 bytes), and
// Swift's Glibc module does not show it (a GNU extension).
#define _GNU_SOURCE
#include "flowrun_system.h"
#include <string.h>

const void *flowrun_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length) {
    return memmem(haystack, haystack_length, needle, needle_length);
}

#ifndef FLOWRUN_SHA256_H
#define FLOWRUN_SHA256_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has the SHA extensions (and SSSE3, SSE4.1) that
/// `flowrun_sha256_blocks` uses, else 0 (then it must not be called).
int flowrun_sha256_hardware(void);

/// SHA-256's compression of `blocks` 64-byte blocks at `data` into `state`
/// (a to h, host order), with the CPU's SHA instructions: what the Swift
/// `SHA256` does word by word, about six times as fast.
void flowrun_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);

#endif

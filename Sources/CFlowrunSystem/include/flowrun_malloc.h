#ifndef FLOWRUN_MALLOC_H
#define FLOWRUN_MALLOC_H

/// Fixes glibc's mmap threshold at `bytes` (M_MMAP_THRESHOLD), which also
/// stops glibc from raising it each time a large block is freed. <malloc.h>
/// is not part of Swift's Glibc module, hence this.
void flowrun_set_mmap_threshold(int bytes);

/// At most `count` malloc arenas (M_ARENA_MAX) for flowrun itself: not the
/// MALLOC_ARENA_MAX variable, which every task would inherit.
void flowrun_set_arena_max(int count);

#endif

#include "flowrun_malloc.h"
#include <malloc.h>

void flowrun_set_mmap_threshold(int bytes) { mallopt(M_MMAP_THRESHOLD, bytes); }

void flowrun_set_arena_max(int count) { mallopt(M_ARENA_MAX, count); }

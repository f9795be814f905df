#define _GNU_SOURCE
#include "flowrun_host.h"
#include <sched.h>
#include <stdlib.h>

int flowrun_affinity_cpu_count(void) {
    // Machines with more than CPU_SETSIZE (1024) CPUs need a bigger set.
    for (int size = 1024; size <= 1 << 20; size *= 2) {
        cpu_set_t *set = CPU_ALLOC(size);
        if (set == NULL) return 0;
        size_t bytes = CPU_ALLOC_SIZE(size);
        CPU_ZERO_S(bytes, set);
        if (sched_getaffinity(0, bytes, set) == 0) {
            int count = CPU_COUNT_S(bytes, set);
            CPU_FREE(set);
            return count;
        }
        CPU_FREE(set);
    }
    return 0;
}

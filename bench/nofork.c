#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <dlfcn.h>
/* Profiling aid, never for real runs: makes flowrun's first fork (the
 * supervisor split, flowrun_supervise) fail, so flowrun runs unsupervised
 * in one process and heaptrack, which stops tracing in forked children,
 * sees the engine's allocations. Other processes are untouched.
 *
 *   gcc -shared -fPIC -o /tmp/nofork.so bench/nofork.c -ldl
 *   LD_PRELOAD=/tmp/nofork.so heaptrack -o /tmp/heap .build/release/flowrun flowrun.yaml --output plain
 *   heaptrack_print /tmp/heap.zst | swift demangle --simplified
 */
extern char *program_invocation_short_name;
static int calls;
pid_t fork(void) {
    if (strncmp(program_invocation_short_name, "flowrun", 7) == 0 && calls++ == 0) { errno = EAGAIN; return -1; }
    pid_t (*real)(void) = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
    return real();
}

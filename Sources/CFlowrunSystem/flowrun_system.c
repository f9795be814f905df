#define _GNU_SOURCE
#include "flowrun_system.h"
#include <sys/prctl.h>

int flowrun_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

short flowrun_spawn_setsid_flag(void) {
    return POSIX_SPAWN_SETSID;
}

int flowrun_set_child_subreaper(int on) {
    return prctl(PR_SET_CHILD_SUBREAPER, on ? 1 : 0, 0, 0, 0);
}

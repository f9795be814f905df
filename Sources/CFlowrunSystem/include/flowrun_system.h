#ifndef FLOWRUN_SYSTEM_H
#define FLOWRUN_SYSTEM_H

// What Glibc's Swift overlay does not show: spawn attributes and file actions
// that are macros or GNU extensions, and prctl's child-subreaper switch.

#include <spawn.h>
#include <sys/types.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+): close every fd >= from in the child.
int flowrun_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);

/// POSIX_SPAWN_SETSID, a GNU extension.
short flowrun_spawn_setsid_flag(void);

/// prctl(PR_SET_CHILD_SUBREAPER, on): orphaned descendants re-parent to us.
int flowrun_set_child_subreaper(int on);

#endif

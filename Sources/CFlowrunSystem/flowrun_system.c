#define _GNU_SOURCE
#include "flowrun_system.h"
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int flowrun_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int flowrun_spawn_file_actions_addchdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

short flowrun_spawn_setsid_flag(void) {
    return POSIX_SPAWN_SETSID;
}

void flowrun_sigset_fill_every_signal(sigset_t *set) {
    sigfillset(set);
    const int bits = 8 * sizeof set->__val[0];
    for (int signal = 1; signal < _NSIG; signal++) {
        set->__val[(signal - 1) / bits] |= 1UL << ((signal - 1) % bits);
    }
}

int flowrun_set_child_subreaper(int on) {
    return prctl(PR_SET_CHILD_SUBREAPER, on ? 1 : 0, 0, 0, 0);
}

int flowrun_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int flowrun_pidfd_send_signal(int pidfd, int signal) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0);
}

const char *flowrun_signal_abbreviation(int signal) {
    return sigabbrev_np(signal);
}

int flowrun_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

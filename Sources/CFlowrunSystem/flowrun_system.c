#define _GNU_SOURCE
#include "flowrun_system.h"
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <errno.h>
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

static volatile int signal_wake_fd = -1;

static void write_signal_number(int signal) {
    int saved = errno;
    unsigned char byte = (unsigned char)signal;
    ssize_t ignored = write(signal_wake_fd, &byte, 1);
    (void)ignored;
    errno = saved;
}

int flowrun_child_exit_signalfd(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int flowrun_forward_signal(int signal, int fd) {
    signal_wake_fd = fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = write_signal_number;
    action.sa_flags = SA_RESTART | (signal == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigemptyset(&action.sa_mask);
    return sigaction(signal, &action, NULL);
}

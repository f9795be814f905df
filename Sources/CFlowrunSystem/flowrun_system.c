#define _GNU_SOURCE
#include "flowrun_system.h"
#include <fcntl.h>
#include <unistd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/openat2.h>
#include <unistd.h>

void flowrun_name_this_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
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

int flowrun_open_beneath(int folder, const char *path, int flags) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, folder, path, &how, sizeof how);
}

// MARK: - Dispositions a child resets

/// The kernel's sigaction, to look at and reset any signal, glibc's own
/// included (glibc's sigaction refuses 32 and 33).
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

/// Bit `signal - 1`: a signal that flowrun handles or ignores, which a child
/// sets back to its default before exec. Most of the 64 are at their default
/// already: resetting only these saves the child some 60 system calls
/// (9 µs here), time the parent spends blocked in clone (CLONE_VFORK).
static _Atomic uint64_t signals_to_reset;

static void note_signal_to_reset(int signal) {
    atomic_fetch_or(&signals_to_reset, (uint64_t)1 << (signal - 1));
}

/// The process's ignored and caught signals (bit `signal - 1`) from the
/// `SigIgn` and `SigCgt` lines of /proc/self/status: one read, where asking
/// for each of 64 dispositions was 62 system calls (twice at every run's
/// start). 0 when /proc cannot tell (not mounted): then ask one by one.
static int read_signal_masks(uint64_t *ignored, uint64_t *caught) {
    int file = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (file < 0) return 0;
    char text[4096];
    ssize_t length = read(file, text, sizeof text - 1);
    close(file);
    if (length <= 0) return 0;
    text[length] = 0;
    const char *ignoredLine = strstr(text, "\nSigIgn:\t");
    const char *caughtLine = strstr(text, "\nSigCgt:\t");
    if (ignoredLine == NULL || caughtLine == NULL) return 0;
    char *end;
    errno = 0;
    unsigned long long ignoredMask = strtoull(ignoredLine + 9, &end, 16);
    if (errno != 0 || end == ignoredLine + 9 || *end != '\n') return 0;
    unsigned long long caughtMask = strtoull(caughtLine + 9, &end, 16);
    if (errno != 0 || end == caughtLine + 9 || *end != '\n') return 0;
    *ignored = ignoredMask;
    *caught = caughtMask;
    return 1;
}

void flowrun_note_signal_dispositions(void) {
    uint64_t ignored, caught;
    if (read_signal_masks(&ignored, &caught)) {
        uint64_t handled = (ignored | caught) & ~(((uint64_t)1 << (SIGKILL - 1)) | ((uint64_t)1 << (SIGSTOP - 1)));
        atomic_fetch_or(&signals_to_reset, handled);
        return;
    }
    for (int signal = 1; signal < _NSIG; signal++) {
        if (signal == SIGKILL || signal == SIGSTOP) continue;
        struct kernel_sigaction current;
        if (syscall(SYS_rt_sigaction, signal, NULL, &current, sizeof current.mask) != 0) continue;
        if (current.handler != SIG_DFL) note_signal_to_reset(signal);
    }
}

// MARK: - What flowrun's caller set

/// Bit `signal - 1`: a signal that was ignored when flowrun started. flowrun
/// does not handle such a signal, and its tasks get it ignored too
/// (`nohup flowrun …`), SIGCHLD excepted (ignored, it changes what wait does).
static uint64_t caller_ignored;
/// The soft RLIMIT_NOFILE flowrun started with, given back to each task
/// (flowrun raises its own to the hard limit); valid if `nofile_raised`.
static struct rlimit caller_nofile;
static int nofile_raised;
/// The caller's nice value and scheduling policy, given back to each task:
/// the thread that spawns may be a Dispatch worker, which libdispatch gives
/// a nice value of its own (0, or -4 for a higher QoS), and a child starts
/// with its spawning thread's. Valid if `scheduling_noted`.
static int caller_nice, caller_policy;
static struct sched_param caller_sched_param;
static int scheduling_noted;
/// Whether flowrun has a controlling terminal (or could not tell): each task
/// then leads a session of its own, so none can read or take the terminal.
/// Without one, a task only leads its own process group in flowrun's
/// session: it has no terminal to reach either way, and it stays in the
/// caller's scheduler autogroup (a session of its own would be a new
/// autogroup, where the caller's nice value no longer counts against the
/// caller's other processes; it also costs a task group per spawn).
static int tasks_lead_sessions = 1;

static int is_caller_ignored(int signal) {
    return signal != SIGCHLD && (caller_ignored & ((uint64_t)1 << (signal - 1))) != 0;
}

void flowrun_prepare_process(void) {
    // 0, 1 and 2 open, so that no file flowrun opens later takes one of them
    // (`flowrun wf.yaml >&-` would write the console into events.jsonl).
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (null >= 0 && null != fd) {
            dup2(null, fd);
            close(null);
        }
    }
    uint64_t ignored, caught;
    int known = read_signal_masks(&ignored, &caught);
    for (int signal = 1; signal < _NSIG && signal <= 64; signal++) {
        if (signal == SIGKILL || signal == SIGSTOP) continue;
        // 32 and 33 are the C library's own (thread cancellation, set*id):
        // a glibc posix_spawn leaves them ignored in its child, which says
        // nothing about what the caller wants for them.
        if (signal >= 32 && signal < SIGRTMIN) continue;
        int isIgnored;
        if (known) {
            isIgnored = (ignored & ((uint64_t)1 << (signal - 1))) != 0;
        } else {
            struct kernel_sigaction current;
            if (syscall(SYS_rt_sigaction, signal, NULL, &current, sizeof current.mask) != 0) continue;
            isIgnored = current.handler == SIG_IGN;
        }
        if (isIgnored) caller_ignored |= (uint64_t)1 << (signal - 1);
    }
    // A reader that left or a file size limit makes a write fail (EPIPE,
    // EFBIG), which the console and the record handle, instead of killing
    // flowrun. Tasks get both at their default (unless the caller ignored them).
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    note_signal_to_reset(SIGPIPE);
    note_signal_to_reset(SIGXFSZ);
    errno = 0;
    caller_nice = getpriority(PRIO_PROCESS, 0);  /* Linux: this thread's */
    caller_policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    scheduling_noted = errno == 0 && caller_policy >= 0 && sched_getparam(0, &caller_sched_param) == 0;
    int terminal = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (terminal >= 0) close(terminal);
    tasks_lead_sessions = terminal >= 0 || errno != ENXIO;
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        struct rlimit raised = { limit.rlim_max, limit.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            caller_nofile = limit;
            nofile_raised = 1;
        }
    }
}

int flowrun_signal_ignored_by_caller(int signal) {
    return signal > 0 && signal <= 64 && is_caller_ignored(signal);
}

static volatile int signal_wake_fd = -1;

static void write_signal_number(int signal, siginfo_t *info, void *context) {
    (void)context;
    // One kill that reached both flowrun processes counts once.
    if (flowrun_signal_is_echo(signal, info)) return;
    int saved = errno;
    unsigned char byte = (unsigned char)signal;
    ssize_t ignored = write(signal_wake_fd, &byte, 1);
    (void)ignored;
    errno = saved;
}

int flowrun_forward_signal(int signal, int fd) {
    signal_wake_fd = fd;
    // Before the handler exists, so no child can miss it.
    note_signal_to_reset(signal);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = write_signal_number;
    action.sa_flags = SA_SIGINFO | SA_RESTART | (signal == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigemptyset(&action.sa_mask);
    return sigaction(signal, &action, NULL);
}

// MARK: - Spawning

enum { spawn_stack_size = 64 * 1024 };

struct spawn_child_state {
    const flowrun_spawn_request *request;
    const char *path;
    /// Bit `signal - 1`: a signal to set back to its default.
    uint64_t defaults;
    /// Written by the child when something fails before exec; the parent
    /// reads them after clone returns (CLONE_VFORK: the child has exec'd or exited).
    volatile int error;
    const char *volatile failed_operation;
};

static int move_descriptor(int from, int to, int open_flags) {
    if (from < 0) {
        int null = open("/dev/null", open_flags);
        if (null < 0) return -1;
        if (null == to) return 0;
        int result = dup2(null, to);
        close(null);
        return result < 0 ? -1 : 0;
    }
    // dup2 clears close-on-exec on the copy.
    return dup2(from, to) < 0 ? -1 : 0;
}

/// Runs in the child, which shares flowrun's memory until exec: system
/// calls only, no allocation, no locks.
static int spawn_child(void *argument) {
    struct spawn_child_state *state = argument;
    const flowrun_spawn_request *request = state->request;
    // Every signal as flowrun's caller had it: ignored if the caller ignored
    // it (`nohup`), else at its default. A handler of flowrun's must not run
    // here, and a signal flowrun ignores would stay ignored across exec. The
    // others are as the caller had them already. All signals are still
    // blocked (the parent blocked them before clone).
    struct kernel_sigaction default_action = { SIG_DFL, 0, NULL, 0 };
    struct kernel_sigaction ignore_action = { SIG_IGN, 0, NULL, 0 };
    for (int signal = 1; signal < _NSIG && signal <= 64; signal++) {
        if (!(state->defaults & ((uint64_t)1 << (signal - 1)))) continue;
        struct kernel_sigaction *action = is_caller_ignored(signal) ? &ignore_action : &default_action;
        syscall(SYS_rt_sigaction, signal, action, NULL, sizeof action->mask);
    }
    // Its own process group (pgid = pid), which kill(-pid) reaches. When
    // flowrun has a terminal, a session of its own too (sid = pid): with no
    // controlling terminal, a task that reads /dev/tty fails at once
    // instead of stopping on SIGTTIN or stealing the terminal from flowrun.
    // Without one, flowrun's session has no terminal to reach.
    // Into the task's cgroups first, before exec: writing 0 to cgroup.procs
    // moves the writer. From the child, because the parent is suspended
    // until exec (CLONE_VFORK) and cannot write the pid in between; the
    // memory it shares with flowrun until exec stays charged to flowrun
    // (an mm is charged to its owner), and the new one exec makes is the
    // task's own.
    const char *operation = "cgroup";
    for (int index = 0; index < 2; index++) {
        int procs = request->cgroup_procs[index];
        if (procs >= 0 && write(procs, "0", 1) != 1) goto failed;
    }
    operation = tasks_lead_sessions ? "setsid" : "setpgid";
    if ((tasks_lead_sessions ? setsid() : setpgid(0, 0)) < 0) goto failed;
    // 1 and 2 first, then 0 (the caller's descriptors are >= 3).
    operation = "dup2";
    if (move_descriptor(request->standard_output, 1, O_WRONLY) != 0) goto failed;
    if (move_descriptor(request->standard_error, 2, O_WRONLY) != 0) goto failed;
    if (move_descriptor(request->standard_input, 0, O_RDONLY) != 0) goto failed;
    if (syscall(SYS_close_range, 3, ~0U, 0) != 0) {
        long limit = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < limit; fd++) close((int)fd);
    }
    // The caller's policy and nice value, not the spawning thread's (best
    // effort: going back to a lower nice value may need a privilege the
    // caller had and this thread lost; the task then runs nicer, not faster).
    if (scheduling_noted) {
        int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
        if (policy != caller_policy) sched_setscheduler(0, caller_policy, &caller_sched_param);
        errno = 0;
        if (getpriority(PRIO_PROCESS, 0) != caller_nice || errno != 0) setpriority(PRIO_PROCESS, 0, caller_nice);
    }
    // flowrun raised its own descriptor limit; the task gets the caller's.
    operation = "setrlimit";
    if (nofile_raised && setrlimit(RLIMIT_NOFILE, &caller_nofile) != 0) goto failed;
    operation = "chdir";
    if (request->directory && chdir(request->directory) != 0) goto failed;
    uint64_t no_signals = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &no_signals, NULL, sizeof no_signals);
    operation = "exec";
    execve(state->path, request->arguments, request->environment);
failed:
    state->failed_operation = operation;
    state->error = errno ? errno : EINVAL;
    _exit(127);
}

/// Whether `directory` is also an entry of `path` before `end` (a PATH that
/// lists a folder twice, as a profile sourced twice leaves it): that folder
/// was looked in already, and gave nothing.
static int is_listed_before(const char *directory, size_t length, const char *path, const char *end) {
    while (path < end) {
        const char *next = memchr(path, ':', (size_t)(end - path));
        size_t entry_length = next ? (size_t)(next - path) : (size_t)(end - path);
        const char *entry = entry_length ? path : ".";
        if ((entry_length ? entry_length : 1) == length && memcmp(entry, directory, length) == 0) return 1;
        if (!next) break;
        path = next + 1;
    }
    return 0;
}

/// `name` looked up in `path` (NULL: flowrun's PATH), into `buffer`; NULL if not found.
static const char *find_program(const char *name, const char *path, char *buffer, size_t size) {
    if (!path) path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    size_t name_length = strlen(name);
    const char *whole = path;
    while (*path) {
        const char *end = strchr(path, ':');
        size_t length = end ? (size_t)(end - path) : strlen(path);
        const char *directory = length ? path : ".";
        size_t directory_length = length ? length : 1;
        if (directory_length + 1 + name_length + 1 <= size && !is_listed_before(directory, directory_length, whole, path)) {
            memcpy(buffer, directory, directory_length);
            buffer[directory_length] = '/';
            memcpy(buffer + directory_length + 1, name, name_length + 1);
            if (access(buffer, X_OK) == 0) return buffer;
        }
        if (!end) break;
        path = end + 1;
    }
    return NULL;
}

int flowrun_spawn(flowrun_spawn_request *request, pid_t *pid) {
    char found[4096];
    const char *path = request->program;
    if (!strchr(path, '/')) {
        path = find_program(path, request->search_path, found, sizeof found);
        if (!path) {
            request->failed_operation = "exec";
            return ENOENT;
        }
    }

    // One stack, kept: spawns come one at a time from the engine; a caller
    // that finds it busy maps one of its own.
    static pthread_mutex_t stack_lock = PTHREAD_MUTEX_INITIALIZER;
    static void *kept_stack;
    void *stack = NULL;
    int locked = pthread_mutex_trylock(&stack_lock) == 0;
    if (locked) {
        if (!kept_stack) {
            void *mapped = mmap(NULL, spawn_stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
            kept_stack = mapped == MAP_FAILED ? NULL : mapped;
        }
        stack = kept_stack;
    }
    int stack_is_kept = stack != NULL;
    if (!stack_is_kept) {
        stack = mmap(NULL, spawn_stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED) {
            int error = errno;
            if (locked) pthread_mutex_unlock(&stack_lock);
            request->failed_operation = "mmap";
            return error;
        }
    }

    // Block every signal, glibc's own included, so that none is handled in
    // the child while it shares our memory; the child sets its own mask.
    uint64_t every_signal = ~(uint64_t)0, previous = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &every_signal, &previous, sizeof every_signal);
    static pthread_once_t dispositions_noted = PTHREAD_ONCE_INIT;
    pthread_once(&dispositions_noted, flowrun_note_signal_dispositions);
    // Signals flowrun changed, and those the caller ignored (set again, in
    // case flowrun changed them some other way).
    struct spawn_child_state state = { request, path, atomic_load(&signals_to_reset) | caller_ignored, 0, NULL };
    pid_t child = clone(spawn_child, (char *)stack + spawn_stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &state);
    int clone_error = errno;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, NULL, sizeof previous);

    if (locked) pthread_mutex_unlock(&stack_lock);
    if (!stack_is_kept) munmap(stack, spawn_stack_size);

    if (child < 0) {
        request->failed_operation = "clone";
        return clone_error;
    }
    if (state.error) {
        // It exited before exec: reap it (a waitpid(-1) elsewhere may have done so already).
        waitpid(child, NULL, 0);
        request->failed_operation = state.failed_operation;
        return state.error;
    }
    *pid = child;
    return 0;
}

int flowrun_memory_file(void) {
    return memfd_create("flowrun-command", MFD_CLOEXEC);
}

int flowrun_has_children(void) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int waited;
    do { waited = waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL); } while (waited < 0 && errno == EINTR);
    return !(waited < 0 && errno == ECHILD);
}

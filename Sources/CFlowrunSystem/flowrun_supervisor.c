#define _GNU_SOURCE
#include "flowrun_system.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// The supervisor: flowrun's first process, which the shell knows, forks the
// engine (everything flowrun does) and watches it; the engine watches the
// supervisor through a pipe. Whichever survives the other kills every task
// process (see flowrun_supervise in the header).

/// The signals a user sends to stop a run; the supervisor passes them on.
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

// MARK: - In the engine

/// The read end of the pipe whose only write end the supervisor holds: it
/// reads end-of-file once the supervisor is gone. -1 when unsupervised.
static int supervisor_link = -1;
/// The supervisor's pid (the engine's parent at the fork); 0 when unsupervised.
static pid_t supervisor_pid;

/// Per signal: who sent it last and when, packed (sender << 32 | milliseconds),
/// directly and through the supervisor. Written from signal handlers.
static _Atomic uint64_t last_direct[65], last_forwarded[65];

/// How close in time the two halves of one kill (pkill, kill to the group)
/// arrive at most.
enum { echo_window_ms = 1000 };

static uint32_t monotonic_milliseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint32_t)((uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000);
}

int flowrun_signal_is_echo(int signal, const siginfo_t *info) {
    if (supervisor_pid <= 0 || !info || signal <= 0 || signal >= 65) return 0;
    int forwarded = info->si_code == SI_QUEUE && info->si_pid == supervisor_pid;
    // Who sent it: a process's kill() or sigqueue(); the kernel (a terminal) is no one.
    pid_t sender = forwarded ? (pid_t)info->si_value.sival_int : (info->si_code <= 0 ? info->si_pid : 0);
    if (sender <= 0) return 0;
    uint32_t now = monotonic_milliseconds();
    _Atomic uint64_t *mine = forwarded ? &last_forwarded[signal] : &last_direct[signal];
    _Atomic uint64_t *other = forwarded ? &last_direct[signal] : &last_forwarded[signal];
    uint64_t seen = atomic_load(other);
    if (seen && (pid_t)(seen >> 32) == sender && now - (uint32_t)seen < echo_window_ms) {
        // The same sender reached both processes: one signal, not two.
        atomic_store(other, 0);
        return 1;
    }
    atomic_store(mine, ((uint64_t)(uint32_t)sender << 32) | now);
    return 0;
}

struct link_watch {
    flowrun_supervisor_gone_fn gone;
    void *context;
};

static void *watch_link(void *argument) {
    struct link_watch watch = *(struct link_watch *)argument;
    free(argument);
    flowrun_name_this_thread("flowrun-link");
    char byte;
    ssize_t got;
    // Nothing is ever written: a read returns only at end of file.
    do { got = read(supervisor_link, &byte, 1); } while (got > 0 || (got < 0 && errno == EINTR));
    watch.gone(watch.context);
    return NULL;
}

int flowrun_watch_supervisor(flowrun_supervisor_gone_fn gone, void *context) {
    if (supervisor_link < 0) return -1;
    struct link_watch *watch = malloc(sizeof *watch);
    if (!watch) return -1;
    watch->gone = gone;
    watch->context = context;
    // Every signal blocked in the watcher: signals are the engine's other threads' business.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 512 * 1024);  /* Swift code runs on it */
    pthread_t thread;
    int result = pthread_create(&thread, &attributes, watch_link, watch);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (result != 0) {
        free(watch);
        return -1;
    }
    return 0;
}

// MARK: - In the supervisor

/// The engine's pid while it may be signalled (until it is reaped), else 0.
static volatile pid_t supervised_engine;

/// Passes a signal a process sent (kill, sigqueue) on to the engine, with
/// the sender's pid. A signal from the kernel (the terminal's Ctrl-C,
/// Ctrl-\, a hangup) reached the whole foreground group, the engine too.
static void forward_to_engine(int signal, siginfo_t *info, void *context) {
    (void)context;
    int saved = errno;
    pid_t engine = supervised_engine;
    if (engine > 0 && info->si_code != SI_KERNEL && info->si_pid != engine) {
        union sigval value = { .sival_int = info->si_code <= 0 ? info->si_pid : 0 };
        sigqueue(engine, signal, value);
    }
    errno = saved;
}

static int is_stop_signal(int signal) {
    for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++) {
        if (stop_signals[i] == signal) return 1;
    }
    return 0;
}

static void reap_exited_children(void) {
    while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {}
}

/// Whether this (single-threaded) process has a child left, zombies aside
/// (they were reaped just before). -1 if it cannot tell.
static int has_children(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char byte;
    ssize_t got = read(fd, &byte, 1);
    close(fd);
    return got < 0 ? -1 : got > 0;
}

struct process_parent {
    pid_t pid, parent;
};

/// The parent of every process, from /proc/PID/stat; returns the count (or -1).
static long read_parents(struct process_parent **table, size_t *capacity) {
    DIR *proc = opendir("/proc");
    if (!proc) return -1;
    long count = 0;
    struct dirent *item;
    while ((item = readdir(proc))) {
        char *end;
        long pid = strtol(item->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        char path[64], text[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t got = read(fd, text, sizeof text - 1);
        close(fd);
        if (got <= 0) continue;
        text[got] = 0;
        // "pid (comm) S ppid …": comm may hold spaces and ')'.
        char *close_paren = strrchr(text, ')');
        int parent;
        if (!close_paren || sscanf(close_paren + 1, " %*c %d", &parent) != 1) continue;
        if ((size_t)count == *capacity) {
            size_t grown = *capacity ? *capacity * 2 : 1024;
            struct process_parent *larger = realloc(*table, grown * sizeof **table);
            if (!larger) break;
            *table = larger;
            *capacity = grown;
        }
        (*table)[count++] = (struct process_parent){ (pid_t)pid, (pid_t)parent };
    }
    closedir(proc);
    return count;
}

static int by_pid(const void *first, const void *second) {
    pid_t a = ((const struct process_parent *)first)->pid, b = ((const struct process_parent *)second)->pid;
    return (a > b) - (a < b);
}

/// SIGKILL to every descendant of this process (by /proc parent chains,
/// whatever its user, session or environment); returns how many were found.
static long kill_every_descendant(struct process_parent **table, size_t *capacity) {
    long count = read_parents(table, capacity);
    if (count <= 0) return count;
    struct process_parent *processes = *table;
    qsort(processes, (size_t)count, sizeof *processes, by_pid);
    pid_t me = getpid();
    // Marks spread down from us, one generation (at least) a pass.
    char *mark = calloc((size_t)count, 1);
    if (!mark) return -1;
    long found = 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (long i = 0; i < count; i++) {
            if (mark[i]) continue;
            struct process_parent key = { processes[i].parent, 0 };
            struct process_parent *parent = processes[i].parent == me
                ? NULL : bsearch(&key, processes, (size_t)count, sizeof *processes, by_pid);
            if (processes[i].parent == me || (parent && mark[parent - processes])) {
                mark[i] = 1;
                changed = 1;
                found++;
                kill(processes[i].pid, SIGKILL);
            }
        }
    }
    free(mark);
    return found;
}

/// Kills whatever the engine left (orphans re-parent here: we are a child
/// subreaper), reaping as they go, until nothing is left or `seconds` passed
/// (a process stuck in the kernel cannot be killed sooner).
static void leave_nothing_behind(int seconds) {
    struct process_parent *table = NULL;
    size_t capacity = 0;
    uint32_t started = monotonic_milliseconds();
    for (;;) {
        reap_exited_children();
        // The usual case: the engine cleaned up, no child is left, no /proc walk.
        if (has_children() == 0) break;
        long found = kill_every_descendant(&table, &capacity);
        reap_exited_children();
        if (found <= 0 && has_children() != 1) break;
        if (monotonic_milliseconds() - started > (uint32_t)seconds * 1000) break;
        struct timespec pause = { 0, 2 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
    free(table);
}

static void write_message(const char *text) {
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t written = write(STDERR_FILENO, text, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return;
        text += written;
        length -= (size_t)written;
    }
}

static void supervise(pid_t engine, const sigset_t *caller_mask) {
    // Orphans of the engine's tree re-parent here once the engine is gone.
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    // An ignored SIGCHLD (inherited from the caller) would make the kernel reap children for us.
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &default_action, NULL);
    supervised_engine = engine;
    for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++) {
        struct sigaction current;
        // A signal the caller ignored (nohup) stays ignored, here and in the engine.
        if (sigaction(stop_signals[i], NULL, &current) == 0 && current.sa_handler == SIG_IGN) continue;
        struct sigaction forward;
        memset(&forward, 0, sizeof forward);
        forward.sa_sigaction = forward_to_engine;
        forward.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&forward.sa_mask);
        sigaction(stop_signals[i], &forward, NULL);
    }
    sigset_t mask = *caller_mask;
    sigdelset(&mask, SIGCHLD);
    sigprocmask(SIG_SETMASK, &mask, NULL);

    // Wait for the engine without reaping it (WNOWAIT): its pid stays ours
    // to signal until forwarding is switched off.
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_ALL, 0, &info, WEXITED | WNOWAIT | __WALL) != 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (info.si_pid == engine) break;
        waitpid(info.si_pid, NULL, WNOHANG | __WALL);  // an orphan that re-parented here
    }
    supervised_engine = 0;
    int status = 0;
    while (waitpid(engine, &status, __WALL) < 0 && errno == EINTR) {}

    if (WIFSIGNALED(status) && !is_stop_signal(WTERMSIG(status))) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        char message[160];
        snprintf(message, sizeof message, "flowrun: the engine was killed by SIG%s%s; stopping every task process\n",
                 name ? name : "?", WTERMSIG(status) == SIGKILL ? " (out of memory, or kill -9)" : "");
        write_message(message);
    }
    leave_nothing_behind(10);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1);
}

int flowrun_supervise(void) {
    int link[2];
    if (pipe2(link, O_CLOEXEC) != 0) return -1;
    // Above 0-2, whatever the caller left closed.
    for (int end = 0; end < 2; end++) {
        if (link[end] > 2) continue;
        int moved = fcntl(link[end], F_DUPFD_CLOEXEC, 3);
        close(link[end]);
        link[end] = moved;
    }
    if (link[0] < 0 || link[1] < 0) {
        if (link[0] >= 0) close(link[0]);
        if (link[1] >= 0) close(link[1]);
        return -1;
    }
    // Stop signals and SIGCHLD wait until the supervisor is ready for them.
    sigset_t held, previous;
    sigemptyset(&held);
    for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++) sigaddset(&held, stop_signals[i]);
    sigaddset(&held, SIGCHLD);
    sigprocmask(SIG_BLOCK, &held, &previous);
    pid_t parent = getpid();
    pid_t engine = fork();
    if (engine < 0) {
        sigprocmask(SIG_SETMASK, &previous, NULL);
        close(link[0]);
        close(link[1]);
        return -1;
    }
    if (engine == 0) {
        close(link[1]);
        supervisor_link = link[0];
        supervisor_pid = parent;
        sigprocmask(SIG_SETMASK, &previous, NULL);
        return 0;
    }
    close(link[0]);
    supervise(engine, &previous);
    return -1;  // not reached
}

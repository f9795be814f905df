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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// The supervisor: flowrun's first process, which the shell knows, forks the
// engine (everything flowrun does) and watches it; the engine watches the
// supervisor through a socket pair, the link. Whichever survives the other
// kills every task process and says in the run record that the run was
// killed (see flowrun_supervise in the header).
//
// What goes over the link: from the supervisor, one byte, the signal that
// is killing it (when it can catch it: a SIGKILL sends nothing, so the end
// of file alone means SIGKILL); from the engine, once its record exists,
// events.jsonl's descriptor and the run's start, which the supervisor reads
// only after the engine died (a message in flight outlives its sender).

/// The signals a user sends to stop a run; the supervisor passes them on.
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

// MARK: - In the engine

/// The engine's end of the link, whose other end only the supervisor holds:
/// it reads end-of-file once the supervisor is gone. -1 when unsupervised.
static int supervisor_link = -1;
/// The supervisor's pid (the engine's parent at the fork); 0 when unsupervised.
static pid_t supervisor_pid;
/// The engine's end of the last-words link (a datagram socket pair: each
/// message whole), where it sends the command to run at its death; -1 when unsupervised.
static int last_words_link = -1;

/// The most a last-words command may hold.
enum { max_last_words = 4096 };

/// Per signal: the last half of a kill not yet matched by its other half,
/// packed (forwarded << 63 | sender << 32 | milliseconds), 0 for none. One
/// slot updated by compare-and-swap, because the two halves may be handled
/// at the same moment on two of the engine's threads: with two slots, each
/// handler could miss the other's store and count one kill twice.
static _Atomic uint64_t unmatched_half[65];

/// How close in time the two halves of one kill (pkill, kill to the group)
/// arrive at most.
enum { echo_window_ms = 1000 };

/// The most the engine says about its run for the supervisor's `run_killed` line.
enum { max_facts = 60 * 1024 };

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
    uint64_t side = forwarded ? (uint64_t)1 << 63 : 0;
    uint64_t record = side | ((uint64_t)(uint32_t)sender << 32) | now;
    uint64_t seen = atomic_load(&unmatched_half[signal]);
    for (;;) {
        int matches = seen && (seen & ((uint64_t)1 << 63)) != side
            && (pid_t)((seen >> 32) & 0x7fffffff) == sender && now - (uint32_t)seen < echo_window_ms;
        // The same sender reached both processes: one signal, not two.
        if (matches && atomic_compare_exchange_weak(&unmatched_half[signal], &seen, 0)) return 1;
        if (!matches && atomic_compare_exchange_weak(&unmatched_half[signal], &seen, record)) return 0;
    }
}

struct link_watch {
    flowrun_supervisor_gone_fn gone;
    void *context;
};

/// The sentinel, and whether the run has ended it (then none is started).
static pthread_mutex_t sentinel_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t sentinel_pid;     // guarded by sentinel_lock
static int sentinel_retired;   // guarded by sentinel_lock

/// Starts the engine's sentinel: a child of this thread (which lives as long
/// as the engine does, blocked on the link) whose parent-death signal tells
/// it the engine is gone, however it went; it then continues the
/// supervisor, which a SIGSTOP may have left unable to notice (the engine's
/// death reaches it as SIGCHLD, which continues nothing). The supervisor,
/// running again, kills every task. Named by a pidfd, so that a supervisor
/// gone already and its pid reused gets nothing. Every signal is blocked in
/// this thread, so in the sentinel too (`pkill flowrun` leaves it alone).
static void start_sentinel(void) {
    int supervisor = (int)syscall(SYS_pidfd_open, supervisor_pid, 0);
    if (supervisor < 0) return;
    pid_t engine = getpid();
    // Under the lock: a run that ended before this thread got here starts no sentinel.
    pthread_mutex_lock(&sentinel_lock);
    if (sentinel_retired) {
        pthread_mutex_unlock(&sentinel_lock);
        close(supervisor);
        return;
    }
    // A raw clone with no exit signal, not fork(): a "clone" child, which the
    // engine's reaper (wait4(-1) without __WALL) never reaps and whose end
    // sends no SIGCHLD. Its pid stays its own until the run's end reaps it,
    // even as a zombie if it ended early (anyone's SIGUSR1, the OOM killer):
    // reaped by the reaper, its pid could be reused by an unrelated process,
    // which the SIGKILL at the run's end would then kill.
    pid_t sentinel = (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
    if (sentinel == 0) {
        // A forked copy of a threaded process: system calls only from here on.
        // It keeps no descriptor but the pidfd: a task's pipe it held would
        // keep that task's output open, the run folder's its lock.
        if (supervisor > 0) syscall(SYS_close_range, 0, (unsigned)supervisor - 1, 0);
        syscall(SYS_close_range, (unsigned)supervisor + 1, ~0U, 0);
        prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0);
        if (getppid() == engine) {
            sigset_t awaited;
            sigemptyset(&awaited);
            sigaddset(&awaited, SIGUSR1);
            while (sigwaitinfo(&awaited, NULL) < 0 && errno == EINTR) {}
        }
        syscall(SYS_pidfd_send_signal, supervisor, SIGCONT, NULL, 0);
        _exit(0);
    }
    if (sentinel > 0) sentinel_pid = sentinel;
    pthread_mutex_unlock(&sentinel_lock);
    close(supervisor);
}

void flowrun_supervisor_end_sentinel(void) {
    pthread_mutex_lock(&sentinel_lock);
    sentinel_retired = 1;
    pid_t sentinel = sentinel_pid;
    sentinel_pid = 0;
    pthread_mutex_unlock(&sentinel_lock);
    if (sentinel <= 0) return;
    // Only this reaps it (a clone child: see start_sentinel), so its pid is
    // still its own here, alive or a zombie.
    kill(sentinel, SIGKILL);
    while (waitpid(sentinel, NULL, __WALL) < 0 && errno == EINTR) {}
}

static void *watch_link(void *argument) {
    struct link_watch watch = *(struct link_watch *)argument;
    free(argument);
    flowrun_name_this_thread("flowrun-link");
    start_sentinel();
    unsigned char byte;
    int signal = SIGKILL;  // what no handler could report
    ssize_t got;
    // A byte only when a signal is killing the supervisor; then end of file.
    while ((got = read(supervisor_link, &byte, 1)) != 0) {
        if (got == 1 && byte > 0 && byte < 65) signal = byte;
        if (got < 0 && errno != EINTR) break;
    }
    watch.gone(watch.context, signal);
    return NULL;
}

int flowrun_supervisor_keep_events(int events, double started, const char *facts, size_t facts_length) {
    if (supervisor_link < 0 || facts_length > max_facts) return -1;
    struct iovec data[2] = { { .iov_base = &started, .iov_len = sizeof started }, { .iov_base = (void *)facts, .iov_len = facts_length } };
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_iov = data, .msg_iovlen = 2, .msg_control = control.space, .msg_controllen = sizeof control.space };
    struct cmsghdr *rights = CMSG_FIRSTHDR(&message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(rights), &events, sizeof(int));
    ssize_t sent;
    do { sent = sendmsg(supervisor_link, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    return sent == (ssize_t)(sizeof started + facts_length) ? 0 : -1;
}

/// Starts the message that names the run's cgroup folders (sent before the events').
static const char cgroups_magic[8] = { 'F', 'R', 'C', 'G', 'R', 'O', 'U', 'P' };
/// The most the engine says about its cgroups.
enum { max_cgroups = 8 * 1024 };

void flowrun_supervisor_keep_cgroups(const char *folders, size_t length) {
    if (supervisor_link < 0 || length > max_cgroups) return;
    uint32_t size = (uint32_t)length;
    struct iovec data[3] = { { (void *)cgroups_magic, sizeof cgroups_magic }, { &size, sizeof size }, { (void *)folders, length } };
    struct msghdr message = { .msg_iov = data, .msg_iovlen = 3 };
    ssize_t sent;
    do { sent = sendmsg(supervisor_link, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
}

int flowrun_supervisor_on_death(const char *words, size_t length) {
    if (last_words_link < 0 || length == 0 || length > max_last_words) return -1;
    ssize_t sent;
    do { sent = send(last_words_link, words, length, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    return sent == (ssize_t)length ? 0 : -1;
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
/// The supervisor's end of the link.
static int engine_link = -1;
/// The supervisor's end of the last-words link.
static int last_words_from_engine = -1;

/// Runs the last command the engine sent (`flowrun_supervisor_on_death`),
/// if any, with stdio on /dev/null, and waits for it at most 10 s (then
/// kills it): a controller that does not answer must not hold the shell.
static void run_last_words(void) {
    static char message[max_last_words + 1];
    ssize_t length = -1, got;
    // The last message wins.
    while ((got = recv(last_words_from_engine, message, max_last_words, MSG_DONTWAIT)) > 0 || (got < 0 && errno == EINTR)) {
        if (got > 0) length = got;
    }
    if (length <= 0) return;
    message[length] = 0;
    char *words[64];
    int count = 0;
    for (char *word = message; word < message + length && count < 63; word += strlen(word) + 1) words[count++] = word;
    words[count] = NULL;
    pid_t child = fork();
    if (child == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(words[0], words);
        _exit(127);
    }
    if (child < 0) return;
    uint32_t started = monotonic_milliseconds();
    while (waitpid(child, NULL, WNOHANG) == 0) {
        if (monotonic_milliseconds() - started > 10 * 1000) {
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
            break;
        }
        struct timespec pause = { 0, 10 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
}

/// A signal that kills the supervisor (any it can catch but the stop
/// signals it passes on): tells the engine which, so that the record says
/// 128+N as the shell does, then dies of it (the default action, pending
/// until this handler returns; a fault re-runs its instruction and dies).
static void report_own_death(int signal) {
    int saved = errno;
    unsigned char byte = (unsigned char)signal;
    (void)!send(engine_link, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigaction(signal, &fallback, NULL);
    raise(signal);
    errno = saved;
}

/// Whether signal N's default action ends a process (those that stop it,
/// continue it or do nothing aside, and the two no one can catch).
static int ends_a_process(int signal) {
    switch (signal) {
    case SIGKILL: case SIGSTOP: case SIGCHLD: case SIGCONT: case SIGTSTP:
    case SIGTTIN: case SIGTTOU: case SIGURG: case SIGWINCH:
        return 0;
    default:
        return 1;
    }
}

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

static double monotonic_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static int write_all(int fd, const char *text, size_t length) {
    while (length > 0) {
        ssize_t written = write(fd, text, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return -1;
        text += written;
        length -= (size_t)written;
    }
    return 0;
}

/// The engine died of `signal` before it could end its record: appends the
/// run's end to events.jsonl for it, a `run_killed` line with the signal and
/// flowrun's exit code (docs/events-json.md), through the descriptor the
/// engine sent once the record existed (none: no record, nothing to say).
/// A line the engine was writing when it died is ended first, so that the
/// new line is whole (readers skip the broken one).
/// The run's cgroup folders as the engine named them (NUL-separated), from the link.
static char cgroup_folders[max_cgroups + 1];
static size_t cgroup_folders_length;

/// Every process in `folder`'s attempt folders (and in itself) killed: v2's
/// cgroup.kill where there is one, else SIGKILL to each pid in cgroup.procs,
/// read again until it is empty (a fork may land between read and kill).
static void kill_cgroup(const char *folder) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cgroup.kill", folder);
    int kill_file = open(path, O_WRONLY | O_CLOEXEC);
    if (kill_file >= 0) {
        (void)!write(kill_file, "1", 1);
        close(kill_file);
        return;
    }
    snprintf(path, sizeof path, "%s/cgroup.procs", folder);
    for (int round = 0; round < 100; round++) {
        int procs = open(path, O_RDONLY | O_CLOEXEC);
        if (procs < 0) return;
        char text[4096];
        ssize_t got = read(procs, text, sizeof text - 1);
        close(procs);
        if (got <= 0) return;
        text[got] = 0;
        for (char *line = text, *next; *line; line = next) {
            long pid = strtol(line, &next, 10);
            if (next == line) break;
            if (pid > 0) kill((pid_t)pid, SIGKILL);
        }
        struct timespec pause = { 0, 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
}

/// Calls `each` for every attempt folder in the run's cgroup folders, then for each run folder.
static void for_each_cgroup(void (*each)(const char *)) {
    for (size_t offset = 0; offset < cgroup_folders_length;) {
        const char *folder = cgroup_folders + offset;
        size_t length = strnlen(folder, cgroup_folders_length - offset);
        offset += length + 1;
        if (length == 0) continue;
        DIR *directory = opendir(folder);
        if (directory) {
            for (struct dirent *entry; (entry = readdir(directory));) {
                if (entry->d_type != DT_DIR || entry->d_name[0] == '.') continue;
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
                each(path);
            }
            closedir(directory);
        }
        each(folder);
    }
}

/// rmdir, retried a while: a cgroup is busy until its last process has exited.
static void remove_cgroup(const char *folder) {
    for (int round = 0; round < 200 && rmdir(folder) != 0 && errno == EBUSY; round++) {
        struct timespec pause = { 0, 5 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
}

/// The engine's messages, read once it is gone: the cgroups message
/// (`flowrun_supervisor_keep_cgroups`), then the events one. Returns the
/// events descriptor (-1 if none came) and fills `received`/`length` with
/// the events message's bytes.
static int read_engine_messages(char *received, size_t capacity, size_t *length) {
    static char bytes[sizeof cgroups_magic + sizeof(uint32_t) + max_cgroups + sizeof(double) + max_facts];
    size_t total = 0;
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    int events = -1;
    for (;;) {
        memset(&control, 0, sizeof control);
        struct iovec data = { .iov_base = bytes + total, .iov_len = sizeof bytes - total };
        struct msghdr message = { .msg_iov = &data, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space };
        ssize_t got = recvmsg(engine_link, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        for (struct cmsghdr *part = CMSG_FIRSTHDR(&message); part; part = CMSG_NXTHDR(&message, part)) {
            if (part->cmsg_level == SOL_SOCKET && part->cmsg_type == SCM_RIGHTS && part->cmsg_len >= CMSG_LEN(sizeof(int))) {
                if (events >= 0) close(events);
                memcpy(&events, CMSG_DATA(part), sizeof(int));
            }
        }
        total += (size_t)got;
        if (total == sizeof bytes) break;
    }
    size_t start = 0;
    if (total >= sizeof cgroups_magic + sizeof(uint32_t) && memcmp(bytes, cgroups_magic, sizeof cgroups_magic) == 0) {
        uint32_t size;
        memcpy(&size, bytes + sizeof cgroups_magic, sizeof size);
        if (size <= max_cgroups && sizeof cgroups_magic + sizeof size + size <= total) {
            memcpy(cgroup_folders, bytes + sizeof cgroups_magic + sizeof size, size);
            cgroup_folders_length = size;
            start = sizeof cgroups_magic + sizeof size + size;
        }
    }
    *length = total - start < capacity ? total - start : capacity;
    memcpy(received, bytes + start, *length);
    return events;
}

static void record_engine_death(int signal, int code, int events, const char *received, size_t length) {
    // The start (a double), then the run's facts: `,"file":…` (JSON members).
    if (events < 0) return;
    struct stat info;
    if (length < sizeof(double) || fstat(events, &info) != 0 || !S_ISREG(info.st_mode)) {
        close(events);
        return;
    }
    double started;
    memcpy(&started, received, sizeof started);
    const char *facts = received + sizeof started;
    size_t facts_length = length - sizeof started;
    char last = '\n';
    if (info.st_size > 0 && pread(events, &last, 1, info.st_size - 1) != 1) last = '\n';
    double elapsed = monotonic_seconds() - started;
    char seconds[32];
    snprintf(seconds, sizeof seconds, "%.3f", elapsed > 0 && elapsed < 1e12 ? elapsed : 0.0);
    // 2.5 rather than 2.500, 2 rather than 2.000 (as the engine writes seconds).
    char *end = seconds + strlen(seconds);
    while (end > seconds && end[-1] == '0') *--end = 0;
    if (end > seconds && end[-1] == '.') *--end = 0;
    char head[192];
    int head_length = snprintf(head, sizeof head, "%s{\"event\":\"run_killed\",\"elapsed\":%s,\"signal\":%d,\"exit_code\":%d",
                               last == '\n' ? "" : "\n", seconds, signal, code);
    // One write, so that the line is whole or absent.
    static char line[sizeof head + max_facts + 2];
    if (head_length > 0 && (size_t)head_length < sizeof head) {
        memcpy(line, head, (size_t)head_length);
        memcpy(line + head_length, facts, facts_length);
        memcpy(line + head_length + facts_length, "}\n", 2);
        (void)write_all(events, line, (size_t)head_length + facts_length + 2);
    }
    close(events);
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
    // A write to a closed stderr or past a file size limit fails rather than
    // kill the supervisor before its sweep (the engine keeps its own settings).
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, NULL);
    sigaction(SIGXFSZ, &ignore, NULL);
    for (int signal = 1; signal < 65; signal++) {
        if (!ends_a_process(signal) || is_stop_signal(signal) || signal == SIGPIPE || signal == SIGXFSZ) continue;
        struct sigaction current;
        // Ignored by the caller: stays ignored. The reserved real-time signals fail here, and that is fine.
        if (sigaction(signal, NULL, &current) != 0 || current.sa_handler == SIG_IGN) continue;
        struct sigaction report;
        memset(&report, 0, sizeof report);
        report.sa_handler = report_own_death;
        sigemptyset(&report.sa_mask);
        sigaction(signal, &report, NULL);
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

    int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    if (WIFSIGNALED(status) && !is_stop_signal(WTERMSIG(status))) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        char message[160];
        snprintf(message, sizeof message, "flowrun: the engine was killed by SIG%s%s; stopping every task process\n",
                 name ? name : "?", WTERMSIG(status) == SIGKILL ? " (out of memory, or kill -9)" : "");
        write_message(message);
    }
    static char received[sizeof(double) + max_facts];
    size_t length = 0;
    int events = read_engine_messages(received, sizeof received, &length);
    if (WIFSIGNALED(status)) record_engine_death(WTERMSIG(status), code, events, received, length);
    else if (events >= 0) close(events);
    // A task with resources runs in a cgroup: everything in it goes, as
    // the tree does, and the folders with it (the engine, gone, cannot).
    for_each_cgroup(kill_cgroup);
    leave_nothing_behind(10);
    for_each_cgroup(remove_cgroup);
    run_last_words();
    _exit(code);
}

int flowrun_supervise(void) {
    int link[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link) != 0) return -1;
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
    // The last words: without them the run still works, its Slurm jobs unguarded.
    int words[2] = { -1, -1 };
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, words) == 0) {
        for (int end = 0; end < 2; end++) {
            if (words[end] > 2) continue;
            int moved = fcntl(words[end], F_DUPFD_CLOEXEC, 3);
            close(words[end]);
            words[end] = moved;
        }
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
        if (words[0] >= 0) close(words[0]);
        if (words[1] >= 0) close(words[1]);
        return -1;
    }
    if (engine == 0) {
        // A supervisor that dies while the engine is stopped (SIGSTOP, a
        // debugger) continues it: the kernel sends SIGCONT, the engine reads
        // the link's end of file and kills every task (a stopped engine
        // would leave them running until someone continued it). The fork
        // came from the supervisor's only thread, which lives as long as it.
        // (Gone before this call: no SIGCONT comes, and none is needed, the engine runs.)
        prctl(PR_SET_PDEATHSIG, SIGCONT, 0, 0, 0);
        close(link[1]);
        if (words[1] >= 0) close(words[1]);
        last_words_link = words[0];
        supervisor_link = link[0];
        supervisor_pid = parent;
        sigprocmask(SIG_SETMASK, &previous, NULL);
        return 0;
    }
    close(link[0]);
    engine_link = link[1];
    if (words[0] >= 0) close(words[0]);
    last_words_from_engine = words[1];
    supervise(engine, &previous);
    return -1;  // not reached
}

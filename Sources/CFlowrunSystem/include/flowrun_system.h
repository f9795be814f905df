#ifndef FLOWRUN_SYSTEM_H
#define FLOWRUN_SYSTEM_H

// What Glibc's Swift overlay does not show or Swift cannot call; each
// function says in one line why it is in C. signalfd and epoll are not
// wrapped: Swift calls them directly through the headers included here,
// which the overlay leaves out.

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
// Included here too: a module cache built before flowrun_host.h existed
// does not notice a new header in the umbrella folder.
#include "flowrun_host.h"
#include "flowrun_sha256.h"

/// What `flowrun_spawn` starts.
typedef struct {
    /// The program: a path (with a '/'), or a name looked up in `search_path`.
    const char *program;
    char *const *arguments;
    char *const *environment;
    /// The child's fds 0, 1 and 2; -1 means /dev/null. Descriptors >= 3.
    int standard_input, standard_output, standard_error;
    /// The child's working directory; NULL keeps flowrun's.
    const char *directory;
    /// Where a `program` without '/' is looked up (a PATH value); NULL: flowrun's PATH.
    const char *search_path;
    /// Set on failure: what failed ("exec", "chdir", "dup2", "setsid", "setpgid", "setrlimit", "clone", "mmap", "cgroup").
    const char *failed_operation;
    /// `cgroup.procs` files (opened for writing) the child joins before it
    /// execs: the cgroups of a task with resources (SPEC §13); -1 for none.
    int cgroup_procs[2];
} flowrun_spawn_request;

/// Starts a child leading its own process group (pgid = pid) and, when
/// flowrun has a controlling terminal (or cannot tell), a session of its own
/// too (sid = pid: no terminal to read or take; without one it stays in
/// flowrun's session and scheduler autogroup, `tasks_lead_sessions` in
/// flowrun_system.c), with an empty signal mask, every signal at
/// its default disposition except those flowrun's caller ignored (still
/// ignored; see `flowrun_prepare_process`), the caller's soft descriptor
/// limit, fds 0-2 as asked, every other descriptor closed, and `directory`,
/// like posix_spawn with POSIX_SPAWN_SETSID (or SETPGROUP) | SETSIGMASK |
/// SETSIGDEF and file actions, plus what posix_spawn cannot do: the caller's soft descriptor
/// limit and nice value given back, and glibc's own signals (32, 33) reset
/// too, which a posix_spawn'ing parent leaves ignored in flowrun. On a stack
/// kept between calls: posix_spawn maps and unmaps one per call, and in a
/// process with several threads each unmap costs a TLB flush on other CPUs
/// (issue 20: 20 ms of flowrun's CPU per 2,000 tasks, 5-7 % of the wall time
/// at max_parallel 2). Returns 0 with `*pid` set, or the errno of what failed
/// (a failed chdir, dup2 or exec in the child is reported here, and that child reaped).
/// In C: the child runs on a stack of ours between clone and exec, where only async-signal-safe C may run; Swift cannot call clone.
int flowrun_spawn(flowrun_spawn_request *request, pid_t *pid);

/// First thing in main, before any thread or descriptor exists: opens
/// /dev/null onto any of fds 0-2 that is closed; notes which signals the
/// caller left ignored (flowrun's tasks keep them ignored, SIGCHLD excepted);
/// ignores SIGPIPE and SIGXFSZ in flowrun (a write then fails with EPIPE or
/// EFBIG; tasks get them at their default unless the caller ignored them);
/// raises the soft RLIMIT_NOFILE to the hard limit (tasks get the caller's).
/// A process that never calls it runs and spawns as before.
/// In C: reads every disposition with the raw rt_sigaction system call (syscall is variadic; glibc's sigaction refuses 32 and 33).
void flowrun_prepare_process(void);

/// Whether `signal` was ignored when `flowrun_prepare_process` ran: flowrun
/// then leaves it ignored (it does not handle it).
/// In C: reads the table `flowrun_prepare_process` fills, which the spawn's child reads too.
int flowrun_signal_ignored_by_caller(int signal);

/// Looks at every signal's disposition now: those handled or ignored are
/// the ones a child of `flowrun_spawn` resets (with those `flowrun_forward_signal`
/// handles). The first spawn looks by itself; call it again after changing
/// a disposition some other way, before the next spawn.
/// In C: the raw rt_sigaction system call again, for the table the spawn's child reads.
void flowrun_note_signal_dispositions(void);

/// prctl(PR_SET_NAME): the calling thread's name (15 bytes at most), as ps and top show it.
/// In C: prctl is variadic, and Swift cannot call a variadic C function.
void flowrun_name_this_thread(const char *name);

/// prctl(PR_SET_CHILD_SUBREAPER, on): orphaned descendants re-parent to us.
/// In C: prctl is variadic.
int flowrun_set_child_subreaper(int on);

/// pidfd_open(pid, 0) (Linux 5.3+): a descriptor that names this one process,
/// never a later one with the same pid; it polls readable once the process
/// has exited (a zombie counts as exited). -1 with errno on failure.
/// In C: no glibc wrapper the overlay shows, and syscall is variadic.
int flowrun_pidfd_open(pid_t pid);

/// pidfd_send_signal(pidfd, signal, NULL, 0) (Linux 5.1+). -1 with errno on failure
/// (ESRCH once the process has exited).
/// In C: no glibc wrapper the overlay shows, and syscall is variadic.
int flowrun_pidfd_send_signal(int pidfd, int signal);

/// sigabbrev_np (glibc 2.32+): "KILL" for SIGKILL, NULL for an unknown number.
/// In C: sigabbrev_np is a GNU extension the Glibc overlay hides.
const char *flowrun_signal_abbreviation(int signal);

/// pipe2(fds, O_CLOEXEC): a pipe whose ends no child inherits by accident.
/// In C: pipe2 is a GNU extension the Glibc overlay hides (pipe + fcntl would race a concurrent spawn).
int flowrun_pipe_cloexec(int fds[2]);

/// openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: `path` (which may hold
/// folders) under `folder`, never through a link or out of it, in one call.
/// -1 with errno ENOSYS where the kernel has no openat2 (before 5.6).
int flowrun_open_beneath(int folder, const char *path, int flags);

/// Installs a handler for `signal` that writes the signal's number as one
/// byte to `fd` (non-blocking; every forwarded signal shares the last `fd`
/// given): the self-pipe trick, whichever thread takes the signal.
/// SA_RESTART; SA_NOCLDSTOP for SIGCHLD.
/// In C: the handler runs in signal context and may only make async-signal-safe calls, which Swift cannot promise.
int flowrun_forward_signal(int signal, int fd);

// MARK: - The supervisor (flowrun_supervisor.c)

/// Splits flowrun in two; call first thing in main, while the process has
/// one thread. Returns 0 in the child, the engine, which goes on to do
/// everything flowrun does; -1 (errno set) when it cannot split, and flowrun
/// runs unsupervised. The parent, the pid the shell knows, never returns: it
/// is a child subreaper that passes SIGINT, SIGTERM, SIGHUP and SIGQUIT sent
/// by a process (not the terminal's, which reach the engine too) on to the
/// engine, waits for it, kills every descendant left (by /proc parent
/// chains, whatever their user) and exits with the engine's status, or
/// 128+N if the engine died of signal N (SIGKILL, the OOM killer): then it
/// first appends a `run_killed` line to the record's events.jsonl.
/// In C: after the fork the supervisor runs no Swift at all (a forked copy of a multithreaded runtime is not safe to use).
int flowrun_supervise(void);

/// Called once, on a thread of its own, when the supervisor is gone, with
/// the signal that killed it (SIGKILL when it could not say).
typedef void (*flowrun_supervisor_gone_fn)(void *context, int signal);

/// In the engine: starts a thread (every signal blocked) that calls `gone`
/// when the supervisor has died (the end of a socket only the supervisor
/// holds: no race with a death before this call). -1 when unsupervised.
/// In C: it reads the link `flowrun_supervise` keeps, on a thread started with every signal blocked.
int flowrun_watch_supervisor(flowrun_supervisor_gone_fn gone, void *context);

/// In the engine, once the run record exists: hands the supervisor a
/// descriptor of events.jsonl (opened for appending), the run's start
/// (CLOCK_MONOTONIC seconds) and `facts` (JSON members, each after a comma,
/// at most 60 KiB), so that if the engine is killed the supervisor appends
/// a `run_killed` line holding them. -1 when unsupervised.
/// In C: the descriptor travels as SCM_RIGHTS over the link, which Swift's Glibc overlay makes awkward (CMSG_* are macros).
int flowrun_supervisor_keep_events(int events, double started, const char *facts, size_t facts_length);

/// In the engine, before `flowrun_supervisor_keep_events`: the run's cgroup
/// folders (paths separated by NUL bytes, at most 8 KiB), which the
/// supervisor empties (SIGKILL to every process in them) and removes, with
/// their attempts' folders, should the engine die without doing it.
/// In C: sent over the link, in the message the supervisor reads after the engine died.
void flowrun_supervisor_keep_cgroups(const char *folders, size_t length);

/// In the engine: a command (NUL-separated words, at most 4 KiB) the
/// supervisor runs once the engine is gone, after its sweep, waiting for
/// it at most 10 s: Slurm's `scancel --name=flowrun-RUN`, so that no job
/// of the run outlives it (jobs are not processes the sweep can see).
/// A later call replaces an earlier one. -1 when unsupervised.
int flowrun_supervisor_on_death(const char *words, size_t length);

/// In the engine, at the run's end: kills and reaps the sentinel (a child
/// the supervisor's watch forks to wake a stopped supervisor if the engine
/// dies), and starts none after. Its work ends with the run; gone, it
/// leaves the engine's other children, if any, to tell whether anything
/// of the run is left (`flowrun_has_children`).
/// In C: the sentinel's pid lives with the watch thread that forks it.
void flowrun_supervisor_end_sentinel(void);

/// Whether this process has any child, running or a zombie
/// (`waitid(P_ALL, WNOHANG | WNOWAIT)` does not fail with ECHILD). For a
/// child subreaper, none means no descendant at all: every orphan comes back to it.
/// In C: __WALL and WNOWAIT together, which the overlay spells awkwardly.
int flowrun_has_children(void);

/// A file in memory (memfd, close-on-exec) for a short command's output; -1 with errno.
int flowrun_memory_file(void);

/// In the engine's signal handler: whether this delivery is the second half
/// of one kill that reached both processes (`pkill flowrun`, a kill to the
/// process group): the same sender's signal, once directly and once passed
/// on by the supervisor, within a second. Such an echo must be ignored, or
/// one signal would count as two ("kill everything at once").
/// In C: called from the signal handler (signal context).
int flowrun_signal_is_echo(int signal, const siginfo_t *info);

/// glibc's memmem: the first `needle` in `haystack`, or NULL.
/// In C: memmem is a GNU extension the Glibc overlay hides (glibc's two-way search, not one of our own).
const void *flowrun_memmem(const void *haystack, size_t haystack_length, const void *needle, size_t needle_length);

/// The type (`f_type`, the file system's magic number) of the file system
/// `descriptor` is on, or -1 with errno.
/// In C: the Glibc overlay does not bring in <sys/statfs.h>.
long flowrun_file_system_type(int descriptor);

#endif

/*
 * runner-floor: what flowrun does per task, in C, without flowrun's engine:
 * the floor for a runner built like flowrun (docs/BENCHMARKS.md, "Spawn
 * overhead after the per-task work").
 *
 *   runner-floor [-l] N P      run `/bin/sh -c true` N times, at most P at once
 *
 * Per task: two pipes (stdout, stderr) read through epoll, a vfork-style
 * clone on a kept stack (every signal reset to its default, its own process
 * group, fds 0-2 set, the rest closed: what flowrun_spawn does), SIGCHLD
 * through a signalfd and `waitpid(-1, WNOHANG)`, a task is over when it has
 * exited and both pipes have closed, and two JSON event lines appended to a
 * file. With -l, each task also gets a log file created before it starts
 * (flowrun before it created logs at the first byte).
 *
 * Build: cc -O2 -o runner-floor bench/runner-floor.c
 * Compare: hyperfine -N 'spawn-limit -s 2000 2' 'runner-floor 2000 2'
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { stack_size = 64 * 1024, max_tasks = 1 << 20 };

struct task { int pid, open_pipes, exited; };
static struct task *tasks;
static int *task_of_pid;
static int total, parallel, with_logs, started, running, finished;
static int epoll_fd, events_fd, null_fd;
static char run_dir[256];
static char *stack;

struct child { int out, err; volatile int error; };

static int child_main(void *argument) {
    struct child *child = argument;
    struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } dfl = { SIG_DFL, 0, NULL, 0 };
    for (int s = 1; s < 65; s++) {
        if (s != SIGKILL && s != SIGSTOP) syscall(SYS_rt_sigaction, s, &dfl, NULL, 8);
    }
    setpgid(0, 0);
    if (dup2(child->out, 1) < 0 || dup2(child->err, 2) < 0 || dup2(null_fd, 0) < 0) goto failed;
    syscall(SYS_close_range, 3, ~0U, 0);
    uint64_t none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
    char *argv[] = { "/bin/sh", "-c", "true", NULL };
    execve("/bin/sh", argv, environ);
failed:
    child->error = errno;
    _exit(127);
}

static void event(const char *kind, int index) {
    char line[160];
    int n = snprintf(line, sizeof line, "{\"event\":\"%s\",\"task\":\"t%d\",\"elapsed\":0.5}\n", kind, index + 1);
    if (write(events_fd, line, n) != n) exit(1);
}

static void start_next(void) {
    int index = started++;
    if (with_logs) {
        char path[320];
        snprintf(path, sizeof path, "%s/t%d.log", run_dir, index + 1);
        int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log < 0) exit(1);
        close(log);
    }
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) exit(1);
    struct child child = { out[1], err[1], 0 };
    uint64_t all = ~(uint64_t)0, previous;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &previous, 8);
    int pid = clone(child_main, stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, NULL, 8);
    if (pid < 0 || child.error) exit(1);
    close(out[1]);
    close(err[1]);
    for (int i = 0; i < 2; i++) {
        int fd = i ? err[0] : out[0];
        fcntl(fd, F_SETFL, O_NONBLOCK);
        struct epoll_event e = { .events = EPOLLIN, .data.u64 = ((uint64_t)index << 32) | (uint32_t)fd };
        epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e);
    }
    tasks[index] = (struct task){ pid, 2, 0 };
    task_of_pid[pid % max_tasks] = index;
    running++;
    event("task_started", index);
}

static void finish_if_over(int index) {
    if (!tasks[index].exited || tasks[index].open_pipes > 0) return;
    running--;
    finished++;
    event("task_finished", index);
}

int main(int argc, char **argv) {
    int arg = 1;
    if (arg < argc && strcmp(argv[arg], "-l") == 0) { with_logs = 1; arg++; }
    if (argc - arg != 2) { fprintf(stderr, "usage: runner-floor [-l] N P\n"); return 2; }
    total = atoi(argv[arg]);
    parallel = atoi(argv[arg + 1]);
    if (total < 1 || parallel < 1 || total > max_tasks) return 2;
    tasks = calloc(total, sizeof *tasks);
    task_of_pid = calloc(max_tasks, sizeof *task_of_pid);
    snprintf(run_dir, sizeof run_dir, "runner-floor-runs/%d", getpid());
    mkdir("runner-floor-runs", 0755);
    mkdir(run_dir, 0755);
    char path[320];
    snprintf(path, sizeof path, "%s/events.jsonl", run_dir);
    events_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    int signal_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = UINT64_MAX };
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, signal_fd, &e);

    while (started < total && running < parallel) start_next();
    struct epoll_event ready[64];
    char buffer[65536];
    while (finished < total) {
        int count = epoll_wait(epoll_fd, ready, 64, -1);
        for (int i = 0; i < count; i++) {
            if (ready[i].data.u64 == UINT64_MAX) {
                struct signalfd_siginfo info;
                while (read(signal_fd, &info, sizeof info) > 0) {}
                continue;
            }
            int index = (int)(ready[i].data.u64 >> 32), fd = (int)(uint32_t)ready[i].data.u64;
            if (read(fd, buffer, sizeof buffer) == 0) {
                epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                tasks[index].open_pipes--;
                finish_if_over(index);
            }
        }
        int status, pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            int index = task_of_pid[pid % max_tasks];
            tasks[index].exited = 1;
            finish_if_over(index);
        }
        while (started < total && running < parallel) start_next();
    }
    return 0;
}

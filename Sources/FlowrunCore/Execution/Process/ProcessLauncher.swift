// The process layer: how flowrun starts, reaps and kills task processes.
//
// Tasks are started with posix_spawn rather than Foundation.Process because
// we must control the child's exact state: Foundation's children inherit
// ignored signals and, when launched from a Dispatch thread (all of which
// block nearly every signal), start with SIGTERM blocked, so a timeout could
// never stop them. posix_spawn lets us give each child an empty signal mask,
// default dispositions, its own process group, /dev/null as stdin, only fds
// 0-2, and exactly the environment and directory asked for, at the cost of a
// vfork-style clone + exec (~0.4 ms here). Children are reaped by one
// `ChildReaper`: on SIGCHLD (heard by the run's `OutputPump` thread, or by a
// Dispatch signal source) a `waitpid(-1, WNOHANG)` loop runs, so no thread
// ever waits per child, and a pid → completion registry (filled in step with
// each spawn, holding statuses that arrive before their registration) routes
// each exit.
// Killing a task's tree needs more than `kill(-pgid)`: a descendant may leave
// the group with setsid() or escape by a double fork. flowrun therefore makes
// itself a child subreaper (such orphans re-parent to flowrun, not init, and
// are reaped by the same loop) and puts a marker variable, FLOWRUN_TREE, in
// every task's environment; `ProcessTreeKiller` finds a tree by process group
// or marker in /proc, signals each member through a pidfd (immune to pid
// reuse), and learns that members are gone from pidfd readiness, not polling.

import CFlowrunSystem
import Glibc

/// Starts `shell -c script` with posix_spawn in a clean state (see the note
/// above). Stateless; callable from any thread. Most callers go through
/// `ChildReaper.launch`, which also arranges the reaping.
enum ProcessLauncher {
    /// /dev/null, read-only, opened once: every child's stdin is a dup2 of it,
    /// cheaper than a path lookup per spawn. -1 if it could not be opened
    /// (each child then opens /dev/null itself, and says so if that fails).
    private static let standardInput = open("/dev/null", O_RDONLY | O_CLOEXEC)

    /// Spawns the request's shell and returns its pid, which is also the id
    /// of the new process group it leads.
    ///
    /// The child gets: a new process group (pgid = pid), an empty signal mask
    /// and every signal at its default disposition, stdin `/dev/null`,
    /// stdout/stderr as given, no other descriptor (everything >= 3 is
    /// closed), exactly `environment`, and `workingDirectory`.
    /// Whoever calls this must reap the pid (see `ChildReaper`).
    ///
    ///     let pid = try ProcessLauncher.spawn(LaunchRequest(
    ///         shell: "/bin/sh", script: "echo hi", environment: ["PATH=/usr/bin:/bin"],
    ///         workingDirectory: nil, standardOutput: pipeWriteEnd, standardError: pipeWriteEnd))
    static func spawn(_ request: LaunchRequest) throws(ProcessError) -> Int32 {
        let arguments = try CStringArray([request.shell, "-c", request.script], what: "argument")
        let environment = try CStringArray(request.environment, what: "environment entry")

        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        // Descriptors: 1 and 2 first (the caller's fds are >= 3), then 0, then
        // close everything else; glibc clears FD_CLOEXEC on a dup2 target.
        var result: Int32 = 0
        func check(_ code: Int32, _ what: @autoclosure () -> String) throws(ProcessError) {
            if code != 0 { throw ProcessError(operation: what(), code: code) }
        }
        for (fd, target) in [(request.standardOutput, Int32(1)), (request.standardError, Int32(2))] {
            if let fd {
                try check(posix_spawn_file_actions_adddup2(&actions, fd, target), "dup2 \(fd) to \(target)")
            } else {
                try check(posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0), "open /dev/null")
            }
        }
        if standardInput >= 0 {
            try check(posix_spawn_file_actions_adddup2(&actions, standardInput, 0), "dup2 /dev/null to 0")
        } else {
            try check(posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0), "open /dev/null")
        }
        try check(flowrun_spawn_file_actions_addclosefrom(&actions, 3), "closefrom 3")
        if let directory = request.workingDirectory {
            try check(flowrun_spawn_file_actions_addchdir(&actions, directory), "chdir \(directory)")
        }

        // Signals: an empty mask (a Dispatch thread blocks nearly all of them,
        // and a mask survives exec) and every disposition back to default
        // (ignored ones would survive exec too), glibc's internal signals
        // included. pgid 0: the child leads its own group.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        flowrun_sigset_fill_every_signal(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        if request.shell.utf8.contains(UInt8(ascii: "/")) {
            result = posix_spawn(&pid, request.shell, &actions, &attributes, arguments.pointers, environment.pointers)
        } else {
            result = posix_spawnp(&pid, request.shell, &actions, &attributes, arguments.pointers, environment.pointers)
        }
        // glibc reports a failed chdir or exec in the child as the result.
        let place = request.workingDirectory.map { " in \($0)" } ?? ""
        try check(result, "posix_spawn \(request.shell)\(place)")
        return pid
    }
}

// The process layer: how flowrun starts, reaps and kills task processes.
//
// Tasks are started with a spawn of our own rather than Foundation.Process
// because we must control the child's exact state: Foundation's children
// inherit ignored signals and, when launched from a Dispatch thread (all of
// which block nearly every signal), start with SIGTERM blocked, so a timeout
// could never stop them. `flowrun_spawn` (posix_spawn's vfork-style clone,
// on a stack kept between calls, plus what posix_spawn cannot do) gives each child an empty signal mask,
// the dispositions flowrun's caller had (ignored stays ignored, the rest at
// their default), its own process group (and a session of its own when
// flowrun has a controlling terminal, so the task has none), the caller's nice value, policy and descriptor limit,
// /dev/null as stdin, only fds
// 0-2, and exactly the environment and directory asked for, at the cost of a
// clone + exec (~0.4 ms here). Children are reaped by one
// `ChildReaper`: on SIGCHLD (heard on the run's `EventLoop` thread) a
// `waitpid(-1, WNOHANG)` loop runs, so no thread
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

/// Starts `shell -c script` in a clean state (see the note above).
/// Stateless; callable from any thread. Most callers go through
/// `ChildReaper.launch`, which also arranges the reaping.
enum ProcessLauncher {
    /// /dev/null, read-only, opened once: every child's stdin is a dup2 of it,
    /// cheaper than a path lookup per spawn. -1 if it could not be opened
    /// (each child then opens /dev/null itself, and says so if that fails).
    private static let standardInput = open("/dev/null", O_RDONLY | O_CLOEXEC)

    /// Spawns the request's shell and returns its pid, which is also the id
    /// of the process group it leads.
    ///
    /// The child gets: a process group of its own (pgid = pid; a session
    /// too, sid = pid, when flowrun has a controlling terminal: the child
    /// then has none), an empty signal mask and every signal at its default
    /// disposition unless flowrun's caller ignored it (`ProcessStartup`), stdin `/dev/null`,
    /// stdout/stderr as given, no other descriptor (everything >= 3 is
    /// closed), exactly `environment` (after `inherited`), and `workingDirectory`.
    /// Whoever calls this must reap the pid (see `ChildReaper`).
    ///
    ///     let pid = try ProcessLauncher.spawn(LaunchRequest(
    ///         shell: "/bin/sh", script: "echo hi", environment: ["PATH=/usr/bin:/bin"],
    ///         workingDirectory: nil, standardOutput: pipeWriteEnd, standardError: pipeWriteEnd))
    static func spawn(_ request: LaunchRequest) throws(ProcessError) -> Int32 {
        let arguments = try CStringArray(
            request.arguments, what: "argument")
        let environment = try CStringArray(request.environment, what: "environment entry", after: request.inherited)
        var pid: pid_t = 0
        var failedOperation: String?
        let result = request.shell.withCString { shell in
            withOptionalCString(request.workingDirectory) { directory in
                withOptionalCString(request.searchPath) { searchPath in
                    var spawn = flowrun_spawn_request(
                        program: shell, arguments: arguments.pointers, environment: environment.pointers,
                        standard_input: standardInput, standard_output: request.standardOutput ?? -1,
                        standard_error: request.standardError ?? -1, directory: directory, search_path: searchPath,
                        failed_operation: nil,
                        cgroup_procs: (request.cgroupProcs.first ?? -1, request.cgroupProcs.dropFirst().first ?? -1))
                    let result = flowrun_spawn(&spawn, &pid)
                    failedOperation = spawn.failed_operation.map { String(cString: $0) }
                    return result
                }
            }
        }
        if result != 0 {
            // exec: the shell could not be run; chdir: the directory is not there.
            let place = failedOperation == "chdir" ? " \(request.workingDirectory ?? "")" : " \(request.shell)"
            throw ProcessError(operation: (failedOperation ?? "spawn") + place, code: result, failedAtExec: failedOperation == "exec")
        }
        return pid
    }

    private static func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }
}

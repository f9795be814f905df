import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - A flowrun that the test can signal

/// `flowrun` started directly (no launcher) as the leader of its own process
/// group, as a shell starts a foreground job: `signalGroup` is what a
/// terminal does on Ctrl-C. Its stdout and stderr go to files. Nothing
/// hangs: `finish()` kills the group at the hard timeout, and `deinit` kills
/// it if the test never waited.
final class LiveFlowrun {
    struct Ended: CustomStringConvertible {
        var exitStatus: Int32?
        var signal: Int32?
        /// True when the hard timeout killed it.
        var hung: Bool
        /// From the start to the moment the exit was seen.
        var wallSeconds: Double
        var stdout: String
        var stderr: String

        var description: String {
            let how = exitStatus.map { "exit \($0)" } ?? signal.map { "signal \($0)" } ?? "?"
            return "flowrun → \(how)\(hung ? " (killed at the hard timeout: a hang)" : ""), \(String(format: "%.2f s", wallSeconds))\n"
                + "--- stdout ---\n\(stdout.suffix(3000))\n--- stderr ---\n\(stderr.suffix(2000))"
        }
    }

    let pid: pid_t
    let started = ContinuousClock.now
    private let hardDeadline: ContinuousClock.Instant
    private let stdoutPath: String
    private let stderrPath: String
    private let scratch: TemporaryDirectory
    private var ended: Ended?

    /// `inheritedDescriptor`: also give flowrun an open descriptor (on /dev/null) at this number,
    /// the way a careless parent leaks one. `wrapper`: a command that sets
    /// something up and then execs flowrun (its arguments follow), so `pid`
    /// is flowrun's, e.g. `["/bin/sh", "-c", "trap '' HUP; exec \"$0\" \"$@\""]`.
    init(_ arguments: [String], environment overrides: [String: String], directory: String, hardTimeout: Duration,
         inheritedDescriptor: Int32? = nil, wrapper: [String] = []) throws {
        scratch = try TemporaryDirectory(prefix: "flowrun-live")
        stdoutPath = scratch.path + "/stdout"
        stderrPath = scratch.path + "/stderr"
        hardDeadline = started + hardTimeout
        var environment = ProcessInfo.processInfo.environment
        environment["NO_COLOR"] = "1"
        environment.merge(overrides) { _, new in new }

        let binary = try FlowrunBinary.path()
        let pid = try ChildProcess.spawn(
            argv: wrapper + [binary] + arguments, environment: environment.map { "\($0.key)=\($0.value)" }, directory: directory,
            stdoutPath: stdoutPath, stderrPath: stderrPath, inheritedDescriptor: inheritedDescriptor)
        self.pid = pid
    }

    deinit {
        if ended == nil {
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    var elapsed: Double { (ContinuousClock.now - started).seconds }

    /// The engine: the supervisor's (`pid`'s) only child, which does
    /// everything flowrun does (SPEC §11). Waits for it up to `timeout`.
    func engine(timeout: Duration = .seconds(10)) -> pid_t? {
        var found: pid_t?
        _ = poll(until: timeout, every: .milliseconds(2)) {
            let children = ProcessProbe.children(of: pid)
            found = children.count == 1 ? children[0] : nil
            return found != nil
        }
        return found
    }

    /// `kill(-pgid, signal)`: the whole foreground job, as a terminal does it.
    func signalGroup(_ signal: Int32) {
        precondition(ended == nil, "signalling a process already reaped")
        kill(-pid, signal)
    }

    /// Reaps flowrun if it has exited within `timeout`; nil if it is still running.
    func wait(upTo timeout: Duration) -> Ended? {
        if let ended { return ended }
        _ = poll(until: timeout, every: .milliseconds(2)) { reap(options: WNOHANG) }
        return ended
    }

    /// Waits for the exit; at the hard timeout kills the group and reports a hang.
    func finish() -> Ended {
        if let ended { return ended }
        let left = hardDeadline - ContinuousClock.now
        if let ended = wait(upTo: max(left, .zero)) { return ended }
        kill(-pid, SIGKILL)
        _ = reap(options: 0)
        ended?.hung = true
        return ended!
    }

    private func reap(options: Int32) -> Bool {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, options) } while result < 0 && errno == EINTR
        guard result == pid else { return false }
        let signal = status & 0x7F
        ended = Ended(
            exitStatus: signal == 0 ? (status >> 8) & 0xFF : nil, signal: signal == 0 ? nil : signal, hung: false,
            wallSeconds: elapsed,
            stdout: ProcessProbe.text(stdoutPath) ?? "", stderr: ProcessProbe.text(stderrPath) ?? "")
        return true
    }
}

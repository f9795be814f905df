import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run of a program under a hard timeout, measured: exit, wall time and
/// the program's own peak RSS.
///
/// The program is started with `posix_spawn` and reaped with `wait4`, whose
/// `ru_maxrss` is that child's alone (`getrusage(RUSAGE_CHILDREN)` is a
/// maximum over every child ever reaped). One Linux catch: a process that
/// calls `execve` keeps the peak RSS of the memory it replaced
/// (`exec_mmap` → `setmax_mm_hiwater_rss`), and `posix_spawn`'s child shares
/// the test runner's memory until it execs — so every child would report at
/// least the runner's own peak (75–175 MB here, after the big-file cases).
/// `PeakRSSLauncher` avoids that: a tiny C program forks the program from its
/// own ~1 MB of memory and reports that child's `wait4` figures back.
struct ChildProcess {
    struct Outcome {
        var exitStatus: Int32?
        var signal: Int32?
        var timedOut: Bool
        var wallSeconds: Double
        var peakRSSBytes: Int
        /// False when no launcher could be built and `peakRSSBytes` may
        /// include the test runner's own peak.
        var peakRSSIsExact: Bool
    }

    /// Whether the child may still be killed; owned by its `Mutex`. The
    /// watchdog kills only while the child is unreaped, so it can never hit
    /// a recycled pid.
    private final class Watch: Sendable {
        enum State { case running, exited, killed }
        let state = Mutex(State.running)
    }

    /// Runs `executable` with `arguments` (not including argv[0]), stdin
    /// `/dev/null`, stdout and stderr into the given files, in `directory`,
    /// killing its whole process group at `timeout`; through `launcher`
    /// (a `PeakRSSLauncher`) when given.
    static func run(
        executable: String, arguments: [String], environment: [String], directory: String? = nil,
        stdoutPath: String, stderrPath: String, timeout: Duration, launcher: String?
    ) throws -> Outcome {
        let scratch = try TemporaryDirectory(prefix: "flowrun-child")
        let resultPath = scratch.path + "/result"
        let argv = launcher.map { [$0, resultPath, executable] + arguments } ?? [executable] + arguments
        let started = ContinuousClock.now
        let pid = try spawn(argv: argv, environment: environment, directory: directory, stdoutPath: stdoutPath, stderrPath: stderrPath)
        let reaped = try wait(for: pid, timeout: timeout)
        let elapsed = ContinuousClock.now - started

        guard launcher != nil, !reaped.timedOut, reaped.status == 0,
              let result = FileManager.default.contents(atPath: resultPath).map({ String(decoding: $0, as: UTF8.self) }),
              case let fields = result.split(separator: " ").compactMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
              fields.count == 3
        else {
            // No launcher, or it was killed (timeout): what we saw ourselves.
            var outcome = Self.outcome(status: reaped.status, maxRSS: reaped.maxRSS, wallSeconds: elapsed.seconds, exact: false)
            outcome.timedOut = reaped.timedOut
            if launcher != nil && !reaped.timedOut && reaped.status != 0 {
                throw FlowrunBinaryError("the RSS launcher failed (status \(reaped.status)); see stderr in \(stderrPath)")
            }
            return outcome
        }
        return Self.outcome(status: Int32(fields[0]), maxRSS: fields[1], wallSeconds: Double(fields[2]) / 1e9, exact: true)
    }

    private static func outcome(status: Int32, maxRSS: Int, wallSeconds: Double, exact: Bool) -> Outcome {
        let terminatingSignal = status & 0x7F
        #if canImport(Darwin)
        let peakRSSBytes = maxRSS  // bytes on Darwin
        #else
        let peakRSSBytes = maxRSS * 1024  // kilobytes on Linux
        #endif
        return Outcome(
            exitStatus: terminatingSignal == 0 ? (status >> 8) & 0xFF : nil,
            signal: terminatingSignal == 0 ? nil : terminatingSignal,
            timedOut: false,
            wallSeconds: wallSeconds,
            peakRSSBytes: peakRSSBytes,
            peakRSSIsExact: exact)
    }

    /// Starts `arguments` in its own process group with a clean signal state,
    /// stdin /dev/null and stdout/stderr to files. `inheritedDescriptor`: also
    /// open /dev/null at that number in the child, without close-on-exec, the
    /// way a careless parent leaks a descriptor.
    static func spawn(
        argv arguments: [String], environment: [String], directory: String?, stdoutPath: String, stderrPath: String,
        inheritedDescriptor: Int32? = nil
    ) throws -> pid_t {
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of the test runner's: what its other tests hold open at
        // this moment (without close-on-exec) would count against a child's
        // `ulimit -n` and differ from run to run.
        if let closeFrom = addCloseFromAction { _ = closeFrom(&actions, 3) }
        if let inheritedDescriptor {
            // Opened in the child only (no other test's child can inherit it).
            posix_spawn_file_actions_addopen(&actions, inheritedDescriptor, "/dev/null", O_RDONLY, 0)
        }
        if let directory {
            guard let addChdir = addChdirAction else {
                throw FlowrunBinaryError("this C library has no posix_spawn_file_actions_addchdir_np; cannot start a child in \(directory)")
            }
            _ = addChdir(&actions, directory)
        }

        // A clean signal state (the test runner's threads may block some) and
        // its own process group, so the watchdog can kill the whole tree.
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw FlowrunBinaryError("posix_spawn \(arguments[0]): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34+); without it
    /// a child inherits what the runner leaks, as it always did.
    private static let addCloseFromAction = cLibrarySymbol(
        "posix_spawn_file_actions_addclosefrom_np",
        as: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)

    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29+, macOS 10.15+).
    private static let addChdirAction = cLibrarySymbol(
        "posix_spawn_file_actions_addchdir_np",
        as: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)

    /// Waits for `pid`, killing its process group at `timeout`, and reaps it.
    private static func wait(for pid: pid_t, timeout: Duration) throws -> (status: Int32, maxRSS: Int, timedOut: Bool) {
        let watch = Watch()
        let watchdog = DispatchWorkItem {
            watch.state.withLock { state in
                guard state == .running else { return }
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                state = .killed
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(timeout.seconds * 1e9)), execute: watchdog)

        // Wait without reaping, so the pid stays ours while the watchdog may still fire.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
            guard errno == EINTR else { throw FlowrunBinaryError("waitid: \(String(cString: strerror(errno)))") }
        }
        let timedOut = watch.state.withLock { state in
            defer { state = .exited }
            return state == .killed
        }
        watchdog.cancel()
        // Whatever the run left behind in its group goes too.
        kill(-pid, SIGKILL)

        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw FlowrunBinaryError("wait4: \(String(cString: strerror(errno)))") }
        }
        return (status, Int(usage.ru_maxrss), timedOut)
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

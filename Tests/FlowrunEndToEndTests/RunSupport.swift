import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `Run…` suites whose tests hold a wall-time tolerance or race a
/// sleep: `flowrun FILE` running real workflows (SPEC §2, §3, §6, §7). One
/// test at a time, so that timing tolerances measure flowrun, not a 200 MB
/// neighbour competing for the same two cores. Ahead of the parallel tests,
/// so that it runs beside them from the start instead of after them.
@Suite(.serialized, .aheadOfTheParallelTests) enum RunEndToEnd {}

/// The `Run…` suites that measure no time: every wait in them is a
/// handshake (a file, an event) or a generous hang guard, so they run beside
/// everything else instead of one at a time.
@Suite enum RunEndToEndParallel {}

// MARK: - A sandbox per test

/// A temporary directory for one run: the workflow file, the run record
/// (`--log-dir`), and whatever the tasks write. Tasks find it as `$SANDBOX`.
///
/// Every process the run starts inherits `FLOWRUN_E2E_TOKEN`, unique to the
/// sandbox, so `survivors()` finds whatever outlived flowrun (unless it
/// cleared its environment; those write their pids to files), and `deinit`
/// kills them so a failing test leaves nothing behind.
final class RunSandbox {
    let directory: TemporaryDirectory
    let token = "e2e-" + UUID().uuidString
    var path: String { directory.path }
    /// `--log-dir`: the run record lands in `record/RUN_ID/`.
    var logDirectory: String { path + "/record" }

    init() throws {
        directory = try TemporaryDirectory(prefix: "flowrun-run")
    }

    deinit {
        for pid in survivors() { kill(pid, SIGKILL) }
        // Processes that cleared their environment are known only by the pids they wrote.
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".pid") }
        for file in files {
            guard let pid = pid(in: file), pid > 1, pid != getpid(), ProcessProbe.isAlive(pid),
                  ProcessProbe.commandLine(of: pid).contains("sleep") else { continue }
            kill(pid, SIGKILL)
        }
    }

    /// The environment every run gets on top of the test runner's.
    var environment: [String: String] { ["SANDBOX": path, "FLOWRUN_E2E_TOKEN": token] }

    @discardableResult
    func write(workflow text: String, to name: String = "workflow.yaml") throws -> String {
        try directory.write(text, to: name)
    }

    /// The arguments of a run of `workflow` with the record in the sandbox.
    func arguments(_ workflow: String, _ extra: [String], output: String = "plain") -> [String] {
        [workflow, "--log-dir", logDirectory, "--output", output] + extra
    }

    /// Runs `text` to completion through the measuring harness (the RSS
    /// launcher), in the sandbox, killed at `timeout`.
    func run(_ text: String, _ extra: [String] = [], output: String = "plain", timeout: Duration = .seconds(30),
             environment extraEnvironment: [String: String] = [:]) throws -> FlowrunRun {
        let workflow = try write(workflow: text)
        return try FlowrunBinary.run(
            arguments(workflow, extra, output: output), in: path,
            environment: environment.merging(extraEnvironment) { _, new in new }, timeout: timeout)
    }

    /// Starts `text` in its own process group and returns at once
    /// (`wrapper`: see `LiveFlowrun.init`).
    func start(_ text: String, _ extra: [String] = [], hardTimeout: Duration = .seconds(30), wrapper: [String] = []) throws -> LiveFlowrun {
        let workflow = try write(workflow: text)
        return try LiveFlowrun(arguments(workflow, extra), environment: environment, directory: path, hardTimeout: hardTimeout, wrapper: wrapper)
    }

    /// Runs `text` to completion as `wrapper + [flowrun] + arguments` (`nice
    /// -n 13`, `prlimit --nofile=64:64`, `sh -c '… exec "$0" "$@"'`), killed
    /// at `timeout`; stdout and stderr land in the sandbox's `stdout` and `stderr`.
    func run(wrapped wrapper: [String], _ text: String, timeout: Duration = .seconds(30)) throws -> ChildProcess.Outcome {
        let workflow = try write(workflow: text)
        return try ChildProcess.run(
            executable: wrapper[0], arguments: Array(wrapper.dropFirst()) + [try FlowrunBinary.path()] + arguments(workflow, []),
            environment: environment.map { "\($0.key)=\($0.value)" } + ["PATH=/usr/bin:/bin:/usr/sbin:/sbin"],
            directory: path, stdoutPath: file("stdout"), stderrPath: file("stderr"), timeout: timeout, launcher: nil)
    }

    /// The path of system tool `name` (`nice`, `prlimit`, `tmux`, …); throws,
    /// naming it, if it is not installed: a test never skips silently.
    static func tool(_ name: String) throws -> String {
        for directory in ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]
        where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
            return "\(directory)/\(name)"
        }
        throw FlowrunBinaryError("\(name) is not installed; this test needs it")
    }

    /// The one run record under `--log-dir`.
    func record(sourceLocation: SourceLocation = #_sourceLocation) throws -> RunRecordFiles {
        let runs = runFolders(in: logDirectory)
        let only = try #require(runs.count == 1 ? runs.first : nil, "expected one run folder in \(logDirectory), found \(runs)", sourceLocation: sourceLocation)
        return try RunRecordFiles(directory: logDirectory + "/" + only, sourceLocation: sourceLocation)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: file(name)) }

    /// The file's bytes as text, nil if it does not exist.
    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: file(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    func lines(_ name: String) -> [String] {
        (read(name) ?? "").split(separator: "\n").map(String.init)
    }

    /// The pid a task wrote to `name`, nil if it wrote none.
    func pid(in name: String) -> Int32? {
        read(name).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Waits (a bounded poll) until `name` exists and holds at least `lines` lines.
    func waitFor(_ name: String, lines count: Int = 1, timeout: Duration = .seconds(15)) -> Bool {
        poll(until: timeout) { self.lines(name).count >= count }
    }

    /// Waits (a bounded poll) until the run's events.jsonl has a line with `"event":"KIND"`.
    func waitForEvent(_ kind: String, timeout: Duration = .seconds(15)) -> Bool {
        poll(until: timeout) {
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: self.logDirectory)) ?? []
            return runs.contains { run in
                (ProcessProbe.text(self.logDirectory + "/" + run + "/events.jsonl") ?? "").contains("\"event\":\"\(kind)\"")
            }
        }
    }

    /// Live processes (zombies are dead) that carry this sandbox's token.
    func survivors() -> [Int32] {
        ProcessProbe.processIDs().filter { pid in
            pid != getpid() && ProcessProbe.isAlive(pid) && ProcessProbe.environment(of: pid).contains("FLOWRUN_E2E_TOKEN=" + token)
        }
    }

    /// Survivors described for a failure message.
    func describeSurvivors() -> String {
        survivors().map { "\($0) \(ProcessProbe.commandLine(of: $0))" }.joined(separator: "; ")
    }
}

/// Calls `condition` every few milliseconds until it holds or `timeout` passes.
func poll(until timeout: Duration, every interval: Duration = .milliseconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        usleep(UInt32(interval.seconds * 1_000_000))
    }
}

// MARK: - /proc

/// Reads /proc: which processes exist, which are alive (a zombie is dead).
enum ProcessProbe {
    static func processIDs() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
    }

    /// Exists and is not a zombie (`State: Z`) or dead (`X`).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let status = text("/proc/\(pid)/status"),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("State:") })
        else { return false }
        let state = line.dropFirst("State:".count).trimmingCharacters(in: .whitespaces)
        return !state.hasPrefix("Z") && !state.hasPrefix("X")
    }

    /// `NAME=VALUE` entries (empty when unreadable: another uid, or gone).
    static func environment(of pid: Int32) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    static func commandLine(of pid: Int32) -> String {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return "?" }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
    }

    /// Direct children of `pid`, from every thread's `children` file.
    static func children(of pid: Int32) -> [Int32] {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return threads.flatMap { thread in
            (text("/proc/\(pid)/task/\(thread)/children") ?? "").split(separator: " ").compactMap { Int32($0) }
        }
    }

    static func text(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }
}

// MARK: - Intervals

/// The most intervals that overlap at any instant (an end at the same
/// instant as a start does not overlap it).
func maximumOverlap(_ intervals: [(start: Double, end: Double)]) -> Int {
    var points: [(time: Double, change: Int)] = []
    for interval in intervals {
        points.append((interval.start, 1))
        points.append((interval.end, -1))
    }
    points.sort { first, second in
        first.time < second.time || (first.time == second.time && first.change < second.change)
    }
    var running = 0
    var most = 0
    for (_, change) in points {
        running += change
        most = max(most, running)
    }
    return most
}

/// Lines `NAME start|end SECONDS` appended by tasks, as intervals per name.
func intervals(fromLines lines: [String]) -> [(name: String, start: Double, end: Double)] {
    var starts: [String: Double] = [:]
    var result: [(name: String, start: Double, end: Double)] = []
    for line in lines {
        let fields = line.split(separator: " ")
        guard fields.count == 3, let time = Double(fields[2]) else { continue }
        let name = String(fields[0])
        if fields[1] == "start" { starts[name] = time } else if let start = starts[name] { result.append((name, start, time)) }
    }
    return result
}

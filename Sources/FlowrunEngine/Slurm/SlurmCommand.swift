import CFlowrunSystem
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Slurm's commands where this run found them on PATH (`sbatch` is needed
/// to start; the others are looked for beside it, then on PATH).
package struct SlurmTools: Sendable {
    var sbatch: String
    var squeue: String
    var scancel: String
    var sacct: String

    /// The tools on `searchPath`, or the name of the first one missing.
    package static func find(searchPath: String) -> Result<SlurmTools, SlurmToolMissing> {
        var found: [String] = []
        for name in ["sbatch", "squeue", "scancel", "sacct"] {
            guard let path = lookUp(name, in: searchPath) else { return .failure(SlurmToolMissing(name: name)) }
            found.append(path)
        }
        return .success(SlurmTools(sbatch: found[0], squeue: found[1], scancel: found[2], sacct: found[3]))
    }

    private static func lookUp(_ name: String, in searchPath: String) -> String? {
        for folder in searchPath.split(separator: ":") where !folder.isEmpty {
            let path = "\(folder)/\(name)"
            if access(path, X_OK) == 0 { return path }
        }
        return nil
    }
}

/// `executor: slurm` with a Slurm command not on PATH.
package struct SlurmToolMissing: Error, Sendable {
    package var name: String
}

/// One Slurm command run to its end through the engine's child reaper (no
/// thread waits for it): its stdout and stderr go to a memory file read
/// back once it has exited, on the engine's queue.
enum SlurmCommand {
    struct Outcome: Sendable {
        /// The exit code (128+N for signal N); -1 when it could not start.
        var status: Int32
        var output: String
        /// Killed after `timeout` seconds without an answer.
        var timedOut = false
    }

    /// A Slurm command that has not answered in this long is killed: a
    /// hung `squeue` would stop every poll (no job's end seen, Ctrl-C
    /// waiting for ever), a hung `sbatch` every submission.
    static let defaultTimeout = 60.0

    /// A command started: `kill()` ends it (its process group) unless it has ended.
    final class Running: @unchecked Sendable {
        // @unchecked: `ended` belongs to the engine's queue, where both the completion and kill() run.
        let pid: Int32
        fileprivate var ended = false
        fileprivate var timedOut = false
        init(pid: Int32) { self.pid = pid }
        func kill() {
            guard !ended, pid > 0 else { return }
            _ = Glibc.kill(-pid, SIGKILL)
        }
    }

    @discardableResult
    static func run(_ arguments: [String], environment: [String], reaper: ChildReaper, queue: DispatchQueue,
                    timeout: Double = defaultTimeout,
                    completion: @escaping @Sendable (Outcome) -> Void) -> Running? {
        let capture = flowrun_memory_file()
        guard capture >= 0 else {
            let reason = String(cString: strerror(errno))
            queue.async { completion(Outcome(status: -1, output: "cannot run \(arguments[0]): a memory file: \(reason)")) }
            return nil
        }
        let request = LaunchRequest(
            shell: arguments[0], script: "", command: arguments, environment: environment,
            workingDirectory: nil, standardOutput: capture, standardError: capture)
        let holder = RunningHolder()
        do {
            let pid = try reaper.launch(request, on: queue) { exit in
                let output = readAll(capture)
                close(capture)
                let timedOut = holder.running?.timedOut ?? false
                holder.running?.ended = true
                completion(Outcome(
                    status: exit.shellStatus,
                    output: timedOut ? "\(arguments[0]) did not answer in \(Int(timeout)) s and was stopped" + (output.isEmpty ? "" : ": " + output) : output,
                    timedOut: timedOut))
            }
            // Called on the (serial) queue, where the completion runs too: it cannot have run yet.
            dispatchPrecondition(condition: .onQueue(queue))
            let running = Running(pid: pid)
            holder.running = running
            queue.asyncAfter(deadline: .now() + timeout) {
                guard !running.ended else { return }
                running.timedOut = true
                running.kill()
            }
            return running
        } catch {
            close(capture)
            queue.async { completion(Outcome(status: -1, output: "cannot run \(arguments[0]): \(error)")) }
            return nil
        }
    }

    /// The command's `Running`, set on the queue as soon as the launch returned.
    private final class RunningHolder: @unchecked Sendable {
        var running: Running?
    }

    private static func readAll(_ descriptor: Int32) -> String {
        lseek(descriptor, 0, SEEK_SET)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += buffer.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

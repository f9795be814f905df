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
    }

    static func run(_ arguments: [String], environment: [String], reaper: ChildReaper, queue: DispatchQueue,
                    completion: @escaping @Sendable (Outcome) -> Void) {
        let capture = flowrun_memory_file()
        guard capture >= 0 else {
            let reason = String(cString: strerror(errno))
            queue.async { completion(Outcome(status: -1, output: "cannot run \(arguments[0]): a memory file: \(reason)")) }
            return
        }
        let request = LaunchRequest(
            shell: arguments[0], script: "", command: arguments, environment: environment,
            workingDirectory: nil, standardOutput: capture, standardError: capture)
        do {
            _ = try reaper.launch(request, on: queue) { exit in
                let output = readAll(capture)
                close(capture)
                completion(Outcome(status: exit.shellStatus, output: output))
            }
        } catch {
            close(capture)
            queue.async { completion(Outcome(status: -1, output: "cannot run \(arguments[0]): \(error)")) }
        }
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

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What the job script waits for after its task ended: the task's group
/// minus its zombies. A zombie was told from a live process by the `ps` on
/// the job's PATH, and by its state `Z` alone: a `ps` that printed
/// something else (here: `Z` for every process) and a process whose first
/// thread ended while another runs (state `Z` too, `pthread_exit` in main)
/// left a TERM-ignoring leftover running after its job had ended. Both
/// fail on a script that asks `ps` for `pgid`/`stat`.
extension SlurmTests {
    /// Whether `pid` still has a thread that runs: not gone, and not a
    /// zombie with its last thread (a zombie is one with a single thread).
    static func hasALiveThread(_ pid: Int32) -> Bool {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        if threads.count > 1 { return true }
        guard let status = ProcessProbe.text("/proc/\(pid)/status") else { return false }
        return !status.contains("State:\tZ")
    }

    /// Runs `workflow` (the task leaves `leftover.pid`'s process behind) to
    /// its end with `environment`; the leftover must not outlive the job.
    static func expectLeftoverKilled(_ workflow: String, environment: [String: String] = [:], in sandbox: RunSandbox,
                                     sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = try sandbox.write(workflow: workflow)
        let run = try FlowrunBinary.run(sandbox.arguments(path, []), in: sandbox.path,
                                        environment: sandbox.environment.merging(environment) { _, new in new }, timeout: .seconds(120))
        #expect(run.exitStatus == 0, "\(run)", sourceLocation: sourceLocation)
        let pid = try #require(sandbox.lines("leftover.pid").first.flatMap { Int32($0) }, "the leftover never started: \(run)",
                               sourceLocation: sourceLocation)
        defer { kill(pid, SIGKILL) }
        // The job has ended: the leftover was killed before it did (a few seconds for init to reap it).
        let gone = SlurmTestCluster.until(.seconds(5)) { !hasALiveThread(pid) }
        #expect(gone, "the leftover (pid \(pid)) outlived its job: \(ProcessProbe.text("/proc/\(pid)/status") ?? "")",
                sourceLocation: sourceLocation)
        #expect(SlurmTestCluster.until(.seconds(10)) { (try? SlurmTestCluster.jobs().isEmpty) == true }, sourceLocation: sourceLocation)
    }

    @Test func aLeftoverWhoseMainThreadEndedIsKilledAfterTheGrace() throws {
        let sandbox = try RunSandbox()
        // TERM ignored; the main thread ends (pthread_exit), another sleeps on: state `Z`, alive.
        try """
            import ctypes, os, signal, threading, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            threading.Thread(target=lambda: time.sleep(300)).start()
            with open(os.environ["SANDBOX"] + "/leftover.pid.tmp", "w") as f: f.write(str(os.getpid()) + "\\n")
            os.rename(os.environ["SANDBOX"] + "/leftover.pid.tmp", os.environ["SANDBOX"] + "/leftover.pid")
            ctypes.CDLL(None).pthread_exit(None)
            """.write(toFile: sandbox.file("leftover.py"), atomically: false, encoding: .utf8)
        try Self.expectLeftoverKilled("""
            executor: slurm
            kill_grace: \(Int(Self.grace))s
            tasks:
              leaves:
                run: |
                  python3 "$SANDBOX/leftover.py" &
                  until [ -s "$SANDBOX/leftover.pid" ] && grep -q '^State:.Z' /proc/$(cat "$SANDBOX/leftover.pid")/status; do sleep 0.05; done
                  echo left
            """, in: sandbox)
    }

    @Test func aPsOnTheJobsPathThatSaysZombieForAllLeavesNoLeftover() throws {
        let sandbox = try RunSandbox()
        let bin = sandbox.path + "/fakebin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        // A `ps` that answers every process group with `Z`.
        let fake = "#!/bin/sh\nfor f in /proc/[0-9]*/stat; do read -r l < \"$f\" 2>/dev/null || continue; set -- ${l##*) }; echo \"$3 Z\"; done\n"
        _ = FileManager.default.createFile(atPath: bin + "/ps", contents: Data(fake.utf8), attributes: [.posixPermissions: 0o755])
        try Self.expectLeftoverKilled("""
            executor: slurm
            kill_grace: \(Int(Self.grace))s
            tasks:
              leaves:
                run: |
                  sh -c 'trap "" TERM; echo $$ > "$SANDBOX/leftover.pid"; while :; do sleep 1; done' &
                  until [ -s "$SANDBOX/leftover.pid" ]; do sleep 0.05; done
                  echo left
            """, environment: ["PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")], in: sandbox)
    }
}

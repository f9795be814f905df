import FlowrunModel
import FlowrunValues
import FlowrunEvents
#if canImport(Glibc)
import Glibc
#endif

/// One attempt's cgroup (SPEC §13): its limits, the `cgroup.procs` the
/// child joins before exec, and what is read back at the end — the peak
/// memory and whether the kernel killed for the limit. Owned by one
/// `ProcessAttempt`, on the engine's queue.
final class AttemptCgroup {
    struct Problem: Error { var text: String }

    let version: RunCgroups.Version
    /// v2: one folder; v1: the memory hierarchy's, then the cpu one's (if any).
    let folders: [String]
    let memoryLimit: UInt64?
    /// Open until the spawn is done (`closeProcs`).
    private(set) var procs: [Int32]

    private init(version: RunCgroups.Version, folders: [String], memoryLimit: UInt64?, procs: [Int32]) {
        self.version = version
        self.folders = folders
        self.memoryLimit = memoryLimit
        self.procs = procs
    }

    deinit { _ = end() }

    static func make(in runFolders: [String], name: String, version: RunCgroups.Version, resources: ResourceRequest) -> Result<AttemptCgroup, Problem> {
        var folders: [String] = []
        var procs: [Int32] = []
        func failed(_ what: String, _ code: Int32) -> Result<AttemptCgroup, Problem> {
            for descriptor in procs { close(descriptor) }
            for folder in folders { rmdir(folder) }
            return .failure(Problem(text: "cannot set up the task's cgroup: \(what) (\(String(cString: strerror(code))))"))
        }
        // v1: the cpu hierarchy only when CPUs are declared (memory's always: it measures the peak).
        let hierarchies = version == .v1 && resources.cpus == nil ? Array(runFolders.prefix(1)) : runFolders
        for (position, runFolder) in hierarchies.enumerated() {
            let folder = runFolder + "/" + name
            guard mkdir(folder, 0o755) == 0 || errno == EEXIST else { return failed("mkdir \(folder)", errno) }
            folders.append(folder)
            let isMemory = version == .v2 || position == 0
            let isCPU = version == .v2 || position == 1
            if isMemory, let bytes = resources.memoryBytes {
                let file = version == .v2 ? "memory.max" : "memory.limit_in_bytes"
                let code = SystemFile.write(String(bytes), to: folder + "/" + file)
                guard code == 0 else { return failed("\(file) in \(folder)", code) }
                // No swap to run on past the limit (best effort: absent without swap accounting).
                if version == .v2 { SystemFile.write("0", to: folder + "/memory.swap.max") } else { SystemFile.write(String(bytes), to: folder + "/memory.memsw.limit_in_bytes") }
            }
            if isCPU, let cpus = resources.cpus {
                let period = 100_000
                let quota = max(1000, Int((cpus * Double(period)).rounded()))
                let code = version == .v2
                    ? SystemFile.write("\(quota) \(period)", to: folder + "/cpu.max")
                    : SystemFile.write(String(period), to: folder + "/cpu.cfs_period_us") == 0 ? SystemFile.write(String(quota), to: folder + "/cpu.cfs_quota_us") : EINVAL
                guard code == 0 else { return failed("the CPU quota in \(folder)", code) }
            }
            let descriptor = open(folder + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return failed("cgroup.procs in \(folder)", errno) }
            procs.append(descriptor)
        }
        return .success(AttemptCgroup(version: version, folders: folders, memoryLimit: resources.memoryBytes, procs: procs))
    }

    func closeProcs() {
        for descriptor in procs { close(descriptor) }
        procs = []
    }

    /// Peak memory of everything that ran in it (v2 `memory.peak`, v1 `memory.max_usage_in_bytes`).
    var peakMemoryBytes: UInt64? {
        guard let folder = folders.first else { return nil }
        let value = SystemFile.number(folder + (version == .v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"))
        return value.flatMap { $0 > 0 ? UInt64($0) : nil }
    }

    /// How often the kernel's OOM killer killed in it for its limit:
    /// `oom_kill` of v2 `memory.events` or v1 `memory.oom_control`; nil on a
    /// kernel whose file has no such line (v1 before Linux 4.13).
    var outOfMemoryKills: Int64? {
        guard let folder = folders.first else { return nil }
        let text = SystemFile.read(folder + (version == .v2 ? "/memory.events" : "/memory.oom_control"))
        return SystemFile.field("oom_kill", in: text)
    }

    /// v1's `memory.failcnt`: how often usage hit the limit (reclaim, not
    /// necessarily a kill); with no `oom_kill` line, a hit and a SIGKILL
    /// together are what the cgroup can tell of an out-of-memory death.
    var limitHits: Int64 {
        guard version == .v1, let folder = folders.first else { return 0 }
        return SystemFile.number(folder + "/memory.failcnt") ?? 0
    }

    private var ended = false

    /// At the attempt's end: kills everything left in it, reads what it
    /// used and whether the kernel killed for the limit, removes its folders.
    /// Once; later calls return nothing.
    func end() -> (peakMemoryBytes: UInt64?, outOfMemoryKills: Int64?, limitHits: Int64) {
        guard !ended else { return (nil, nil, 0) }
        ended = true
        closeProcs()
        for folder in folders { Self.killMembers(of: folder, version: version) }
        let reading = (peakMemoryBytes, outOfMemoryKills, limitHits)
        for folder in folders { Self.remove(folder) }
        return reading
    }

    /// v2: `cgroup.kill`; v1: SIGKILL to every pid in `cgroup.procs`, read
    /// again until it is empty (a process may fork between read and kill).
    static func killMembers(of folder: String, version: RunCgroups.Version?) {
        if version == .v2, SystemFile.write("1", to: folder + "/cgroup.kill") == 0 { return }
        for _ in 0..<100 {
            let pids = (SystemFile.read(folder + "/cgroup.procs") ?? "").split(separator: "\n").compactMap { Int32($0) }
            if pids.isEmpty { return }
            for pid in pids { kill(pid, SIGKILL) }
            usleep(1000)
        }
    }

    /// rmdir, retried a while: busy until the last process in it has exited.
    static func remove(_ folder: String) {
        for _ in 0..<200 {
            if rmdir(folder) == 0 || errno != EBUSY { return }
            usleep(5000)
        }
    }
}

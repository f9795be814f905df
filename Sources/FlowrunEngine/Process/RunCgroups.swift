import CFlowrunSystem
import FlowrunModel
import FlowrunValues
#if canImport(Glibc)
import Glibc
#endif

/// The run's cgroups (SPEC §13): one folder per run, `flowrun-RUNID`, under
/// flowrun's own cgroup, and one per attempt of a task with `resources:`
/// inside it, made when the attempt starts and removed when it ends.
/// Tasks without `resources:` get none (they pay nothing for the feature;
/// their use is measured from `wait4`).
///
/// cgroup v2 (coded from Documentation/admin-guide/cgroup-v2.rst): flowrun's
/// cgroup must offer `memory` and `cpu` and let them be enabled for its
/// children (`cgroup.subtree_control`), which the no-internal-processes
/// rule allows only where flowrun's cgroup has no processes of its own or
/// is the root: flowrun first moves its own processes (engine, supervisor,
/// sentinel) into a leaf, `flowrun-RUNID.self`. cgroup v1 (tested here):
/// the `memory` and `cpu` hierarchies, each folder made in both.
///
/// Immutable after `init` and shared with attempts on any queue.
final class RunCgroups: Sendable {
    enum Version: Sendable, Equatable { case v1, v2 }

    let version: Version?
    /// The run's folders (v2: one; v1: memory's, then cpu's); empty when none.
    let runFolders: [String]
    /// Why resources are not enforced, when `version` is nil.
    let notEnforced: String?

    /// Tries v2, then v1; with neither, says why.
    init(runID: String, layout: CgroupLayout = .current) {
        let name = "flowrun-" + runID
        var problems: [String] = []
        if let unified = layout.unified {
            switch Self.prepareUnified(unified, name: name, layout: layout) {
            case .success(let folder):
                version = .v2
                runFolders = [folder]
                notEnforced = nil
                return
            case .failure(let problem):
                problems.append(problem.text)
            }
        }
        if let memory = layout.memory {
            let memoryFolder = memory + "/" + name
            if mkdir(memoryFolder, 0o755) == 0 || errno == EEXIST {
                var folders = [memoryFolder]
                if let cpu = layout.cpu {
                    let cpuFolder = cpu + "/" + name
                    if mkdir(cpuFolder, 0o755) == 0 || errno == EEXIST { folders.append(cpuFolder) }
                }
                version = .v1
                runFolders = folders
                notEnforced = nil
                return
            }
            problems.append("cgroup v1: cannot make a folder in \(memory) (\(String(cString: strerror(errno))))")
        }
        if layout.unified == nil && layout.memory == nil { problems.append("no cgroup hierarchy is mounted") }
        version = nil
        runFolders = []
        notEnforced = problems.joined(separator: "; ")
    }

    private struct Problem: Error { var text: String }

    /// v2: the run's folder with `memory` and `cpu` enabled for its children.
    private static func prepareUnified(_ unified: String, name: String, layout: CgroupLayout) -> Result<String, Problem> {
        guard layout.unifiedControllers.isSuperset(of: ["memory", "cpu"]) else {
            let offered = layout.unifiedControllers.isEmpty ? "none" : layout.unifiedControllers.sorted().joined(separator: " ")
            return .failure(Problem(text: "cgroup v2: \(unified) offers no memory and cpu controllers (cgroup.controllers: \(offered))"))
        }
        var enable = SystemFile.write("+memory +cpu", to: unified + "/cgroup.subtree_control")
        if enable == EBUSY {
            // Processes in flowrun's own cgroup: move ours into a leaf, then try again.
            let leaf = unified + "/" + name + ".self"
            guard mkdir(leaf, 0o755) == 0 || errno == EEXIST else {
                return .failure(Problem(text: "cgroup v2: cannot make a folder in \(unified) (\(String(cString: strerror(errno))))"))
            }
            let own = Set([getpid(), getppid()])
            for line in (SystemFile.read(unified + "/cgroup.procs") ?? "").split(separator: "\n") {
                guard let pid = Int32(line) else { continue }
                if own.contains(pid) || parent(of: pid) == getpid() { SystemFile.write(String(pid), to: leaf + "/cgroup.procs") }
            }
            enable = SystemFile.write("+memory +cpu", to: unified + "/cgroup.subtree_control")
        }
        guard enable == 0 else {
            return .failure(Problem(text: "cgroup v2: cannot enable memory and cpu for children of \(unified) (\(String(cString: strerror(enable)))); run flowrun in a cgroup delegated to it, e.g. systemd-run --user --scope -p Delegate=yes"))
        }
        let folder = unified + "/" + name
        guard mkdir(folder, 0o755) == 0 || errno == EEXIST else {
            return .failure(Problem(text: "cgroup v2: cannot make a folder in \(unified) (\(String(cString: strerror(errno))))"))
        }
        let children = SystemFile.write("+memory +cpu", to: folder + "/cgroup.subtree_control")
        guard children == 0 else {
            rmdir(folder)
            return .failure(Problem(text: "cgroup v2: cannot enable memory and cpu in \(folder) (\(String(cString: strerror(children))))"))
        }
        return .success(folder)
    }

    private static func parent(of pid: Int32) -> Int32? {
        guard let stat = SystemFile.read("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }

    /// A folder for one attempt, limits written, its `cgroup.procs` open for the spawn.
    func attempt(named name: String, resources: ResourceRequest) -> Result<AttemptCgroup, AttemptCgroup.Problem> {
        guard let version else { return .failure(.init(text: notEnforced ?? "no cgroup")) }
        return AttemptCgroup.make(in: runFolders, name: name, version: version, resources: resources)
    }

    /// At the run's end: every attempt folder left (emptied first), then the run's.
    func removeAll() {
        for folder in runFolders {
            for child in Self.subfolders(of: folder) {
                AttemptCgroup.killMembers(of: child, version: version)
                AttemptCgroup.remove(child)
            }
            AttemptCgroup.remove(folder)
        }
    }

    private static func subfolders(of folder: String) -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            guard entry.pointee.d_type == UInt8(DT_DIR) else { continue }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(folder + "/" + name) }
        }
        return names
    }

    /// Tells the supervisor the run's folders, so that it removes them if the engine dies.
    func handToSupervisor() {
        guard !runFolders.isEmpty else { return }
        let bytes = Array(runFolders.joined(separator: "\0").utf8)
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { flowrun_supervisor_keep_cgroups($0.baseAddress, $0.count) }
        }
    }
}

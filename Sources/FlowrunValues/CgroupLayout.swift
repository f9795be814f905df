/// Where this process's cgroups are (SPEC §13): its own folder in the
/// unified (v2) hierarchy, and in cgroup v1's `memory` and `cpu`
/// hierarchies where those are mounted. Read from /proc/self/cgroup and
/// /proc/self/mountinfo; a folder is given whether or not it is writable.
package struct CgroupLayout: Sendable {
    /// This process's cgroup v2 folder, e.g. `/sys/fs/cgroup/user.slice/…`.
    package var unified: String?
    /// The controllers the v2 folder offers its children (`cgroup.controllers`).
    package var unifiedControllers: Set<String> = []
    /// This process's folder in the v1 `memory` hierarchy.
    package var memory: String?
    /// This process's folder in the v1 `cpu` hierarchy.
    package var cpu: String?

    package static let current = read()

    package static func read(proc: String = "/proc/self") -> CgroupLayout {
        var layout = CgroupLayout()
        guard let membership = SystemFile.read(proc + "/cgroup"), let mounts = SystemFile.read(proc + "/mountinfo") else { return layout }
        // hierarchy id:controllers:path
        var paths: [String: String] = [:]
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[0] == "0" && fields[1].isEmpty { paths["unified"] = String(fields[2]) }
            for controller in fields[1].split(separator: ",") { paths[String(controller)] = String(fields[2]) }
        }
        // id parent major:minor root mountpoint options … - fstype source superoptions
        for line in mounts.split(separator: "\n") {
            let halves = line.split(separator: " - ", maxSplits: 1)
            guard halves.count == 2 else { continue }
            let left = halves[0].split(separator: " "), right = halves[1].split(separator: " ")
            guard left.count >= 5, right.count >= 3 else { continue }
            let root = String(left[3]), mountPoint = unescape(String(left[4]))
            func folder(_ path: String?) -> String? {
                guard let path, path.hasPrefix(root) else { return nil }
                let inside = root == "/" ? path : String(path.dropFirst(root.count))
                return inside == "/" || inside.isEmpty ? mountPoint : mountPoint + inside
            }
            if right[0] == "cgroup2", layout.unified == nil {
                layout.unified = folder(paths["unified"])
            } else if right[0] == "cgroup" {
                let options = Set(right[2].split(separator: ",").map(String.init))
                if options.contains("memory"), layout.memory == nil { layout.memory = folder(paths["memory"]) }
                if options.contains("cpu"), layout.cpu == nil { layout.cpu = folder(paths["cpu"]) }
            }
        }
        if let unified = layout.unified, let controllers = SystemFile.read(unified + "/cgroup.controllers") {
            layout.unifiedControllers = Set(controllers.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))
        }
        return layout
    }

    /// mountinfo writes a space in a path as `\040`.
    private static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        return text.replacing("\\040", with: " ").replacing("\\011", with: "\t").replacing("\\134", with: "\\")
    }
}

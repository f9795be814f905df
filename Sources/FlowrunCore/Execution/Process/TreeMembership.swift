import Glibc

/// A rule for which live processes belong to what is being killed: members
/// of given process groups, carriers of a FLOWRUN_TREE marker, and
/// optionally flowrun's own children. Only processes of our effective uid
/// count; flowrun itself never does; exited (zombie) processes never do.
struct TreeMembership: Sendable {
    enum Marker: Sendable {
        /// A component equal to this tree's marker.
        case tree(ProcessTreeMarker)
        /// A component of this run: "RUN.*".
        case run(String)
    }

    var processGroups: Set<Int32>
    var marker: Marker
    /// Also every child of flowrun (orphans that re-parented to the subreaper,
    /// whatever their environment). Only where flowrun owns all its children.
    var includesChildren = false

    /// One task attempt's tree.
    init(_ tree: ProcessTree) {
        processGroups = [tree.processGroup]
        marker = .tree(tree.marker)
    }

    init(processGroups: Set<Int32>, marker: Marker, includesChildren: Bool) {
        self.processGroups = processGroups
        self.marker = marker
        self.includesChildren = includesChildren
    }

    /// Reads /proc now. A group member whose marker names only other trees
    /// is left out: its group id was reused after our group emptied.
    func liveMembers() -> [ProcessEntry] {
        let me = getpid()
        let uid = geteuid()
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        var members: [ProcessEntry] = []
        for pid in ProcessTable.processIDs() where pid != me {
            guard let entry = ProcessTable.entry(pid), !entry.hasExited else { continue }
            let isChild = includesChildren && entry.parent == me
            let inGroup = processGroups.contains(entry.processGroup)
            // Started before flowrun: it cannot carry a marker of ours, and
            // most of the machine's processes are left out without reading
            // their environment.
            if entry.startTime < Self.flowrunStartTime && !isChild && !inGroup { continue }
            guard ProcessTable.isOwned(pid, by: uid) else { continue }
            let markers = ProcessTable.treeMarkers(pid, buffer: &scratch) ?? []
            let marked = markers.contains(where: matches)
            let belongs: Bool
            if marked || isChild {
                belongs = true
            } else if inGroup {
                belongs = markers.isEmpty
            } else {
                belongs = false
            }
            if belongs { members.append(entry) }
        }
        return members
    }

    /// When flowrun started, in /proc's clock ticks after boot.
    private static let flowrunStartTime: UInt64 = ProcessTable.entry(getpid())?.startTime ?? 0

    private func matches(_ component: Substring) -> Bool {
        switch marker {
        case .tree(let tree):
            return component == tree.description
        case .run(let runID):
            return component.hasPrefix(runID) && component.dropFirst(runID.count).first == "."
        }
    }
}

import Glibc

/// A rule for which live processes belong to what is being killed: members
/// of given process groups, carriers of a FLOWRUN_TREE marker, and
/// optionally every descendant of flowrun. flowrun itself never belongs;
/// exited (zombie) processes never do.
///
/// Whose processes: a descendant of flowrun (a /proc parent chain that ends
/// at flowrun: a fact no task can shed, since orphans re-parent to flowrun,
/// a child subreaper) belongs whatever its user — a task run as root may
/// start a daemon under another uid. A process that is not a descendant
/// (it re-parented to init because flowrun was no subreaper, as in a test
/// runner) belongs only if it is of flowrun's own uid: a marker is an
/// environment variable anyone could copy.
struct TreeMembership: Sendable {
    enum Marker: Sendable {
        /// A component equal to this tree's marker.
        case tree(ProcessTreeMarker)
        /// A component of this run: exactly "RUN.SERIAL", never another run
        /// whose id merely starts with RUN.
        case run(String)
    }

    var processGroups: Set<Int32>
    var marker: Marker
    /// Also every descendant of flowrun, whatever its group, environment,
    /// name or user: the end-of-run sweep, where nothing may be left.
    var includesEveryDescendant = false

    /// One task attempt's tree.
    init(_ tree: ProcessTree) {
        processGroups = [tree.processGroup]
        marker = .tree(tree.marker)
    }

    init(processGroups: Set<Int32>, marker: Marker, includesEveryDescendant: Bool) {
        self.processGroups = processGroups
        self.marker = marker
        self.includesEveryDescendant = includesEveryDescendant
    }

    /// Reads /proc now. A group member whose marker names only other trees
    /// is left out: its group id was reused after our group emptied.
    func liveMembers() -> [ProcessEntry] {
        let me = getpid()
        let uid = geteuid()
        // Every process that started no earlier than flowrun: descendants are
        // among them, and most of the machine's processes are left out
        // without reading their environment.
        var recent: [Int32: ProcessEntry] = [:]
        for pid in ProcessTable.processIDs() where pid != me {
            guard let entry = ProcessTable.entry(pid) else { continue }
            if entry.startTime >= Self.flowrunStartTime || processGroups.contains(entry.processGroup) {
                recent[pid] = entry
            }
        }
        var descends: [Int32: Bool] = [me: true]
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        var members: [ProcessEntry] = []
        for entry in recent.values where !entry.hasExited {
            let isDescendant = Self.descends(entry.pid, from: me, in: recent, memo: &descends)
            if includesEveryDescendant && isDescendant {
                members.append(entry)
                continue
            }
            guard isDescendant || ProcessTable.isOwned(entry.pid, by: uid) else { continue }
            // nil (unreadable: another user's and we are not root) counts as no marker.
            let markers = ProcessTable.treeMarkers(entry.pid, buffer: &scratch) ?? []
            if markers.contains(where: matches) {
                members.append(entry)
            } else if processGroups.contains(entry.processGroup) && markers.isEmpty {
                members.append(entry)
            }
        }
        return members
    }

    /// Whether `pid`'s parent chain reaches `ancestor`. Every process on a
    /// descendant's chain started after flowrun, so it is in `recent`; a chain
    /// that leaves `recent` is not ours.
    private static func descends(
        _ pid: Int32, from ancestor: Int32, in recent: [Int32: ProcessEntry], memo: inout [Int32: Bool]
    ) -> Bool {
        var chain: [Int32] = []
        var current = pid
        var answer = false
        while true {
            if let known = memo[current] {
                answer = known
                break
            }
            guard let entry = recent[current], chain.count < 4096 else { break }
            chain.append(current)
            current = entry.parent
        }
        for link in chain { memo[link] = answer }
        return answer
    }

    /// When flowrun started, in /proc's clock ticks after boot.
    private static let flowrunStartTime: UInt64 = ProcessTable.entry(getpid())?.startTime ?? 0

    private func matches(_ component: Substring) -> Bool {
        switch marker {
        case .tree(let tree):
            return component == tree.description
        case .run(let runID):
            // "RUN.SERIAL" with digits only after the dot: "RUN0.1" and "RUN.x.1" are other runs'.
            guard component.hasPrefix(runID + ".") else { return false }
            let serial = component.dropFirst(runID.count + 1)
            return !serial.isEmpty && serial.allSatisfy(\.isASCIIDigitCharacter)
        }
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isWholeNumber }
}

import FlowrunModel
import FlowrunValues

/// Member names (docs/FORMAT.md "Member names"), checked before any member
/// exists without a table of them in memory: a pass over the items hashes
/// each name to 64 bits; only names whose hash repeats (within the fan-out,
/// or among an earlier fan-out's names) are compared whole, in a second
/// pass over the items that made them. Default `GROUP[INDEX]` names need no pass.
extension RunEngine {
    /// Names made by a fan-out whose names are not `GROUP[INDEX]`: for later
    /// fan-outs to check theirs against (sorted hashes, 8 bytes a member).
    struct MadeMemberNames {
        var group: String
        /// The group's node: its items are read again to compare a name whose hash matched.
        var index: Int
        var hashes: [UInt64]
    }

    /// The member's name for `item`: its `name:` filled in, its record
    /// fields, or `GROUP[INDEX]`.
    func memberName(group: Int, fanOut: FanOut, item: FanOutItem, index: Int) -> String {
        let template = fanOut.template.value
        let groupName = nodes[group].name
        let fieldNames: Bool
        if case .records = fanOut.source { fieldNames = true } else { fieldNames = false }
        var name = MemberNaming.name(
            group: groupName, item: item, index: index, template: template.nameTemplate, fieldNames: fieldNames, axes: fanOut.axes,
            vars: plan.workflow.vars, indexNamed: fanOut.indexNamed.contains(index))
        if name == nil, let nameTemplate = template.nameTemplate {
            // A name that cannot be made (a NUL byte, a value over 1 MiB) or is empty keeps the GROUP[INDEX] form.
            if let rendered = try? renderText(nameTemplate, for: nil, item: item, index: index), !rendered.isEmpty { name = rendered }
        }
        return name ?? "\(groupName)[\(index)]"
    }

    /// Whether every member would get the `GROUP[INDEX]` form.
    private func namesAreIndexed(_ fanOut: FanOut) -> Bool {
        if fanOut.template.value.nameTemplate != nil { return false }
        if case .records = fanOut.source { return false }
        return true
    }

    /// The first problem with the members' names, or nil: two members that
    /// would share a name, or a name a task, group, join or another
    /// fan-out's member already has. `makeFeed` gives the items afresh for each pass.
    func memberNameProblem(group: Int, fanOut: FanOut, makeFeed: () -> FanOutFeed) -> String? {
        let groupName = nodes[group].name
        let indexed = namesAreIndexed(fanOut)
        let prefix = groupName + "["
        // Indexed names collide only with a name of that form made elsewhere.
        if indexed && !indexByName.keys.contains(where: { $0.hasPrefix(prefix) }) && madeMemberNames.isEmpty { return nil }
        var hashes: [UInt64] = []
        var firstTaken: (offset: Int, message: String)?
        // Names whose hash an earlier fan-out made: compared whole below.
        var hashMatches: [(offset: Int, name: String, made: Int)] = []
        var feed = makeFeed()
        if let count = feed.knownCount { hashes.reserveCapacity(count) }
        while let item = feed.next() {
            let offset = feed.offset - 1
            if let selected = fanOut.items, !selected.contains(offset) { continue }
            let name = memberName(group: group, fanOut: fanOut, item: item, index: offset)
            let hash = Self.nameHash(name)
            if !indexed { hashes.append(hash) }
            guard firstTaken == nil else { continue }
            if let owner = owner(ofTaken: name) {
                firstTaken = (offset, Self.takenMessage(offset, name, owner))
            } else if let made = madeMemberNames.firstIndex(where: { Self.binarySearch($0.hashes, hash) }) {
                hashMatches.append((offset, name, made))
            }
        }
        if let failure = feed.failure { return failure }
        if let taken = firstTakenAmong(hashMatches), taken.offset < firstTaken?.offset ?? .max {
            firstTaken = (taken.offset, Self.takenMessage(taken.offset, taken.name, "a member of group '\(madeMemberNames[taken.made].group)'"))
        }
        var firstRepeat: (offset: Int, message: String)?
        if !indexed {
            hashes.sort()
            var repeated = Set<UInt64>()
            for position in hashes.indices.dropFirst() where hashes[position] == hashes[position - 1] { repeated.insert(hashes[position]) }
            if !repeated.isEmpty {
                // Second pass: only names whose hash repeats are compared whole.
                var firstOffset: [String: Int] = [:]
                var again = makeFeed()
                while let item = again.next() {
                    let offset = again.offset - 1
                    if let selected = fanOut.items, !selected.contains(offset) { continue }
                    let name = memberName(group: group, fanOut: fanOut, item: item, index: offset)
                    guard repeated.contains(Self.nameHash(name)) else { continue }
                    if let earlier = firstOffset[name] {
                        firstRepeat = (offset, "items \(earlier) and \(offset) would both be named '\(name)'; member names must differ: give the task a name: that tells them apart (for example with ${{ index }})")
                        break
                    }
                    firstOffset[name] = offset
                }
            }
            madeMemberNames.append(MadeMemberNames(group: groupName, index: group, hashes: hashes))
        }
        switch (firstTaken, firstRepeat) {
        case let (taken?, repeated?): return taken.offset <= repeated.offset ? taken.message : repeated.message
        case let (taken?, nil): return taken.message
        case let (nil, repeated?): return repeated.message
        case (nil, nil): return nil
        }
    }

    private static func takenMessage(_ offset: Int, _ name: String, _ owner: String) -> String {
        "item \(offset) would be named '\(name)', which is already the name of \(owner); member names must differ from every other name"
    }

    /// The first of `matches` (names whose hash an earlier fan-out made)
    /// that the earlier fan-out really made: one pass over each such
    /// fan-out's items, keeping only its names with a matched hash.
    private func firstTakenAmong(_ matches: [(offset: Int, name: String, made: Int)]) -> (offset: Int, name: String, made: Int)? {
        guard !matches.isEmpty else { return nil }
        var namesOfMade: [Int: Set<String>] = [:]
        for made in Set(matches.map(\.made)) {
            let wanted = Set(matches.filter { $0.made == made }.map { Self.nameHash($0.name) })
            let group = madeMemberNames[made].index
            guard let fanOut = fanOuts[group], case .success(var feed) = fanOutFeed(fanOut.source, split: fanOut.split, group: group) else { continue }
            var names = Set<String>()
            while let item = feed.next() {
                let offset = feed.offset - 1
                if let selected = fanOut.items, !selected.contains(offset) { continue }
                let name = memberName(group: group, fanOut: fanOut, item: item, index: offset)
                if wanted.contains(Self.nameHash(name)) { names.insert(name) }
            }
            namesOfMade[made] = names
        }
        return matches.first { namesOfMade[$0.made]?.contains($0.name) == true }
    }

    /// Who already has `name`: a task, group or join, or a member of an
    /// indexed fan-out (its `GROUP[INDEX]` form). An earlier fan-out's other
    /// names are found by their hashes (`memberNameProblem`).
    private func owner(ofTaken name: String) -> String? {
        if let taken = indexByName[name] {
            return nodes[taken].group.map { "a member of group '\(nodes[$0].name)'" } ?? "a \(nodes[taken].kind)"
        }
        // GROUP[INDEX] of an indexed fan-out that has started.
        if name.hasSuffix("]"), let open = name.lastIndex(of: "["), let index = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]),
           let other = indexByName[String(name[..<open])], let progress = fanOutProgress[other], let fanOut = fanOuts[other], namesAreIndexed(fanOut),
           !progress.exhausted || index < progress.feed.offset {
            return "a member of group '\(nodes[other].name)'"
        }
        return nil
    }

    private static func binarySearch(_ sorted: [UInt64], _ value: UInt64) -> Bool {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == value
    }

    /// FNV-1a over the name's bytes: the same in every pass, unlike `Hasher`.
    static func nameHash(_ name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

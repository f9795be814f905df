/// The run's nodes by index: tasks, groups and joins of the plan in an
/// array, fan-out members only while they are live (created and not yet
/// let go, see `retire`), so a fan-out of a million items holds a few
/// dozen members at a time. Indices are never reused: a member keeps its
/// number (and its record file names) after it is gone.
///
/// Live members sit in a slab whose free slots are reused; a window of
/// slot numbers, from the oldest live member's index on, finds a member's
/// slot without hashing, and the node is read and changed in place (a
/// dictionary's value was copied out and back at every access).
struct RunNodes {
    /// The plan's nodes, 0..<fixed.count.
    private(set) var fixed: [RunNode] = []
    /// Live members' nodes, and the slots free for the next ones.
    private var slab: [RunNode] = []
    private var freeSlots: [Int32] = []
    /// `window[windowHead + (i - windowBase)]` is member i's slot, or -1 once it is let go.
    private var window: [Int32] = []
    private var windowHead = 0
    private var windowBase = 0
    /// The index the next member gets.
    private(set) var nextIndex = 0
    /// How many members are live.
    private var liveCount = 0

    /// The plan's nodes only: members come and go.
    var indices: Range<Int> { fixed.indices }

    /// How many of the plan's nodes there are.
    var count: Int { fixed.count }

    /// The node in place, through its address: a `_read` or `_modify`
    /// coroutine here malloc'd its frame at every access that was not
    /// inlined (the read's held a copy of the 272-byte node; some 115
    /// accesses a task). The address is the arrays' own storage, which
    /// cannot move or go while `self` is being accessed.
    subscript(index: Int) -> RunNode {
        unsafeAddress {
            if index < fixed.count { return fixed.withUnsafeBufferPointer { $0.baseAddress! + index } }
            let slot = slot(of: index)
            return slab.withUnsafeBufferPointer { $0.baseAddress! + slot }
        }
        unsafeMutableAddress {
            if index < fixed.count { return fixed.withUnsafeMutableBufferPointer { $0.baseAddress! + index } }
            let slot = slot(of: index)
            return slab.withUnsafeMutableBufferPointer { $0.baseAddress! + slot }
        }
    }

    private func slot(of index: Int) -> Int {
        let slot = window[windowHead + index - windowBase]
        precondition(slot >= 0, "member \(index) was let go")
        return Int(slot)
    }

    /// Whether `index` is a plan node or a live member (not one let go).
    func contains(_ index: Int) -> Bool {
        if index < fixed.count { return index >= 0 }
        let position = windowHead + index - windowBase
        return position >= windowHead && position < window.count && window[position] >= 0
    }

    /// Live members, in index order.
    var liveMembers: [Int] {
        guard liveCount > 0 else { return [] }
        return (windowHead..<window.count).filter { window[$0] >= 0 }.map { $0 - windowHead + windowBase }
    }

    mutating func reserveCapacity(_ count: Int) { fixed.reserveCapacity(count) }

    /// Adds a plan node (before any member).
    mutating func append(_ node: RunNode) -> Int {
        precondition(liveCount == 0 && nextIndex == fixed.count, "plan nodes come before members")
        fixed.append(node)
        nextIndex = fixed.count
        windowBase = nextIndex
        return fixed.count - 1
    }

    /// Adds a fan-out member: its index comes after every earlier one.
    mutating func addMember(_ node: RunNode) -> Int {
        let index = nextIndex
        nextIndex += 1
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            slab[Int(free)] = node
        } else {
            slot = Int32(slab.count)
            slab.append(node)
        }
        if liveCount == 0 {
            // Nothing live: the window starts afresh at this member.
            window.removeAll(keepingCapacity: true)
            windowHead = 0
            windowBase = index
        }
        window.append(slot)
        liveCount += 1
        return index
    }

    /// Lets a settled member go: its node is no longer kept.
    mutating func retire(_ index: Int) {
        guard index >= fixed.count, contains(index) else { return }
        let position = windowHead + index - windowBase
        let slot = window[position]
        window[position] = -1
        slab[Int(slot)] = RunNode(kind: .task, name: "")
        freeSlots.append(slot)
        liveCount -= 1
        // Drop the let-go front of the window; compact it once half is dropped.
        while windowHead < window.count && window[windowHead] < 0 {
            windowHead += 1
            windowBase += 1
        }
        if windowHead > 4096 && windowHead * 2 > window.count {
            window.removeFirst(windowHead)
            windowHead = 0
        }
    }
}

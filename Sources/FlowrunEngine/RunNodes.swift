/// The run's nodes by index: tasks, groups and joins of the plan in an
/// array, fan-out members only while they are live (created and not yet
/// let go, see `retire`), so a fan-out of a million items holds a few
/// dozen members at a time. Indices are never reused: a member keeps its
/// number (and its record file names) after it is gone.
struct RunNodes {
    /// The plan's nodes, 0..<fixed.count.
    private(set) var fixed: [RunNode] = []
    /// Fan-out members alive now, by index.
    private var live: [Int: RunNode] = [:]
    /// The index the next member gets.
    private(set) var nextIndex = 0

    /// The plan's nodes only: members come and go.
    var indices: Range<Int> { fixed.indices }

    /// How many of the plan's nodes there are.
    var count: Int { fixed.count }

    subscript(index: Int) -> RunNode {
        _read {
            if index < fixed.count { yield fixed[index] } else { yield live[index]! }
        }
        _modify {
            if index < fixed.count { yield &fixed[index] } else { yield &live[index]! }
        }
    }

    /// Whether `index` is a plan node or a live member (not one let go).
    func contains(_ index: Int) -> Bool {
        index < fixed.count ? index >= 0 : live[index] != nil
    }

    /// Live members, in index order.
    var liveMembers: [Int] { live.keys.sorted() }

    mutating func reserveCapacity(_ count: Int) { fixed.reserveCapacity(count) }

    /// Adds a plan node (before any member).
    mutating func append(_ node: RunNode) -> Int {
        precondition(live.isEmpty && nextIndex == fixed.count, "plan nodes come before members")
        fixed.append(node)
        nextIndex = fixed.count
        return fixed.count - 1
    }

    /// Adds a fan-out member: its index comes after every earlier one.
    mutating func addMember(_ node: RunNode) -> Int {
        let index = nextIndex
        nextIndex += 1
        live[index] = node
        return index
    }

    /// Lets a settled member go: its node is no longer kept.
    mutating func retire(_ index: Int) {
        guard index >= fixed.count else { return }
        live[index] = nil
    }
}

@testable import FlowrunEngine
import Testing

/// A node's group and join counters live behind one reference (a task has
/// none); a node is still a value: a copy changed does not change the original.
@Suite struct RunNodeTests {
    @Test func aCopiedGroupNodeKeepsItsOwnCounters() {
        var group = RunNode(kind: .group, name: "g")
        group.members = [1, 2]
        group.unsettledMembers = 2
        var copy = group
        copy.members.append(3)
        copy.unsettledMembers -= 1
        copy.groupTimedOut = true
        #expect(group.members == [1, 2] && group.unsettledMembers == 2 && !group.groupTimedOut)
        #expect(copy.members == [1, 2, 3] && copy.unsettledMembers == 1 && copy.groupTimedOut)
    }

    @Test func aTaskNodeReadsZeroCountersWithoutStoringAny() {
        var task = RunNode(kind: .task, name: "t")
        #expect(task.members.isEmpty && task.required == 0 && task.settledMembers == 0 && task.joinDefinition == nil)
        task.settledMembers += 1
        #expect(task.settledMembers == 1 && task.succeededMembers == 0 && !task.joinTimedOut)
    }
}

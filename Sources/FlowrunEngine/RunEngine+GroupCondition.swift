import FlowrunModel
import FlowrunValues

/// A group's own `when:` and `if:` (SPEC §15): read as a task's once its
/// needs have settled; a group that does not start skips its members.
extension RunEngine {
    /// Whether the group whose needs have settled, and whose `when:` holds
    /// (`Scheduler.readiness`), starts: its `if:`; else it is settled here.
    func groupPassesItsCondition(_ index: Int) -> Bool {
        guard let condition = groupConditions[index]?.condition else { return true }
        let holds: Bool
        do throws(TemplateRenderError) {
            try ValueLimit.check(condition.value, at: condition.location, in: context(for: index), measuringValues: true)
            // Only a function can fail (fromJSON() of text that is not JSON); a missing value reads as ''.
            holds = try ExpressionEvaluator.isTrue(condition.value, at: condition.location, in: context(for: index))
        } catch {
            for member in nodes[index].members { settle(member, .skipped, why: "group \(nodes[index].name) failed") }
            settle(index, .failed, why: error.description)
            return false
        }
        guard holds else {
            nodes[index].skippedByOwnCondition = true
            skipGroup(index, why: "if: \(condition.value) is false")
            return false
        }
        return true
    }

    /// Its static members wait for it to start: they are skipped with it.
    func skipGroup(_ index: Int, why: String) {
        for member in nodes[index].members { settle(member, .skipped, why: "group \(nodes[index].name) was skipped") }
        settle(index, .skipped, why: why)
    }
}

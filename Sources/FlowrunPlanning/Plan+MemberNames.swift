package import FlowrunModel

/// Fan-out member names known before the run, for selecting a member as a
/// target (`flowrun FILE 'test[os=linux,py=3.12]'`) and for `--dry-run`.
extension Plan {
    /// The members of group `name`'s fan-out, in item order, when their
    /// names are known before the run (a literal list, a range or a matrix,
    /// with no `name:` or one reading only `item`, `item.KEY`, `index` and
    /// `vars` — after `--var`). Nil for a computed `foreach`, a `name:`
    /// reading other values, or a group without a fan-out. The engine names
    /// members by the same rules (`MemberNaming`), so a run uses these names.
    package func staticMemberNames(ofGroup name: String) -> [String]? {
        guard let group = workflow.groups.first(where: { $0.name == name }) else { return nil }
        return Planner.staticMemberNames(of: group, in: workflow)
    }
}

extension Planner {
    /// `Plan.staticMemberNames(ofGroup:)` for a workflow not yet planned (its file's `vars`).
    package static func staticMemberNames(of group: GroupDefinition, in workflow: Workflow) -> [String]? {
        MemberNaming.staticNames(of: group, vars: workflow.vars)
    }
}

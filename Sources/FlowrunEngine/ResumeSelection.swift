import FlowrunModel
package import FlowrunPlanning
package import FlowrunRecord

/// What `flowrun resume` restores from the old run and what it runs again.
///
/// A task is restored when it succeeded in the old run, everything it needs
/// is restored too (a group: all its members; a join: all its members), and
/// `--from` does not name it or anything upstream of it. Everything else runs
/// as in a fresh run; `finally` tasks always run. A task that would be
/// restored but whose identity changed is a refusal: the old stash no longer
/// belongs to the task the file describes. Fan-out members are restored one
/// by one (by name and item) when their group's needs are restored. A task
/// with `sources:` is not restored but checked as up to date, as in any run
/// (its files may have changed since), and what follows it runs again.
package struct ResumeSelection: Sendable {
    /// By task name (fan-out members included).
    package var restored: [String: RestoredTask] = [:]
    /// Tasks that would be restored but changed: `name: what changed`.
    package var changed: [(name: String, changes: [String])] = []

    package struct Problem: Error, Sendable, CustomStringConvertible {
        package var description: String
    }

    package static func select(plan: Plan, identities: [String: TaskIdentity], old: ResumeSource, from: [String]) throws(Problem) -> ResumeSelection {
        // A killed engine's record has one hash for every identity: any change refuses.
        if let planIdentity = old.planIdentity,
           planIdentity != TaskIdentities.planIdentity(identities, steps: (plan.steps + plan.finallySteps).map(\.name)) {
            throw Problem(description: "cannot resume \(old.runID): the workflow changed since that run (a task's script, env, cwd, needs, or a --var or environment value one reads), and its engine was killed before it wrote summary.json, so the record cannot say which task changed; start a fresh run")
        }
        var selector = Selector(plan: plan, identities: identities, old: old)
        if !from.isEmpty {
            let graph = DependencyGraph(mainPhaseOf: plan.workflow)
            let table = TargetTable(plan.workflow, graph: graph)
            for name in from {
                switch selector.rerunTarget(named: name, table: table, graph: graph) {
                case .step(let index)?:
                    selector.markDownstream(of: index)
                case .member(let member)?:
                    // A fan-out member: it runs again, its group is then
                    // not the old run's, so what follows it runs too.
                    selector.rerunMembers.insert(member)
                case nil:
                    let names = plan.steps.filter { $0.kind != .fanOut }.map(\.name) + selector.oldMembers.values.flatMap { $0.map(\.name) }
                    throw Problem(description: "--from \(name): no task, group, join or fan-out member of the run has that name\(Suggestion.hint(for: name, in: names))")
                }
            }
        }
        for index in plan.steps.indices { _ = selector.isComplete(index) }
        if old.planIdentity != nil { selector.keepOnlyWhatNothingRunningReads() }
        var selection = ResumeSelection()
        selection.restored = selector.restored
        selection.changed = selector.changed
        return selection
    }

    private struct Selector {
        let plan: Plan
        let identities: [String: TaskIdentity]
        /// Fan-out templates' identities with their hashes worked out once, as members need them.
        var fanOutIdentities: [String: FanOutIdentity] = [:]
        var stepByName: [String: Int] = [:]
        var oldTasks: [String: ResumeSource.Task] = [:]
        var oldMembers: [String: [ResumeSource.Task]] = [:]
        let old: ResumeSource
        /// Steps `--from` runs again.
        var rerun = Set<Int>()
        /// Fan-out members `--from` names (its group then runs its other members restored).
        var rerunMembers = Set<String>()
        var complete: [Int: Bool] = [:]
        var restored: [String: RestoredTask] = [:]
        var changed: [(name: String, changes: [String])] = []
        /// Dependents of each step, and members of each group.
        var dependents: [[Int]]

        init(plan: Plan, identities: [String: TaskIdentity], old: ResumeSource) {
            self.plan = plan
            self.identities = identities
            self.old = old
            for index in plan.steps.indices { stepByName[plan.steps[index].name] = index }
            for task in old.tasks where task.phase == "main" {
                oldTasks[task.name] = task
                if let group = task.group, task.item != nil { oldMembers[group, default: []].append(task) }
            }
            dependents = Array(repeating: [], count: plan.steps.count)
            for index in plan.steps.indices {
                let step = plan.steps[index]
                for need in step.needs { if let target = stepByName[need] { dependents[target].append(index) } }
                if let group = step.group, let target = stepByName[group] { dependents[index].append(target) }
                if step.kind == .join {
                    for member in step.members { if let target = stepByName[member] { dependents[target].append(index) } }
                }
            }
        }

        enum RerunTarget {
            case step(Int)
            /// A fan-out member, by the name it runs under.
            case member(String)
        }

        /// What `--from NAME` names, found as a run target is (one lookup,
        /// `TargetTable`): `test[0]` is `test[os=linux,py=3.11]`, `g[3]` and
        /// `m-103` one member of a range. Else a step by its plan name (a
        /// fan-out's `G[*]`) or a member the old run named (a computed
        /// `foreach`'s). Nil when the resumed run has no such thing.
        func rerunTarget(named name: String, table: TargetTable, graph: DependencyGraph) -> RerunTarget? {
            switch table.target(named: name) {
            case .node(let node)?:
                if let index = stepByName[graph.nodes[node].name] { return .step(index) }
            case .member(let fanOut, _, let item)?:
                // Only a member the resumed run has (an old run of some members has only those).
                if let index = stepByName[graph.nodes[fanOut].name], plan.steps[index].fanOutItems?.contains(item) ?? true,
                   let member = table.member(item, ofFanOut: fanOut) {
                    return .member(member.name)
                }
            case nil:
                break
            }
            if let index = stepByName[name] { return .step(index) }
            if oldMembers.values.contains(where: { $0.contains { $0.name == name } }) { return .member(name) }
            return nil
        }

        /// The step and everything downstream of it; for a group, its members too.
        mutating func markDownstream(of start: Int) {
            var queue = [start]
            if plan.steps[start].kind == .group {
                queue += plan.steps[start].members.compactMap { stepByName[$0] }
            }
            while let next = queue.popLast() {
                guard rerun.insert(next).inserted else { continue }
                queue += dependents[next]
            }
        }

        /// Whether the step's outcome is the old run's, restored whole.
        mutating func isComplete(_ index: Int) -> Bool {
            if let known = complete[index] { return known }
            complete[index] = false  // cycles cannot pass validation; this keeps recursion finite
            let step = plan.steps[index]
            var result = !rerun.contains(index) && step.needs.allSatisfy { need in stepByName[need].map { isComplete($0) } ?? false }
            switch step.kind {
            case .task:
                // A task with sources is never restored blindly: its files may
                // have changed since; the run checks it as up to date instead.
                result = result && (step.task?.sources.isEmpty ?? true) && restore(task: step.name)
            case .fanOut:
                let group = step.group ?? ""
                // A killed engine's events name members, not their items: they run again.
                if result && (step.task?.sources.isEmpty ?? true) && old.planIdentity == nil {
                    let members = oldMembers[group] ?? []
                    var all = old.groupStatus[group] == "succeeded"
                    for member in members {
                        if member.status == "succeeded", !rerunMembers.contains(member.name) {
                            all = restore(member: member, template: step.name) && all
                        } else {
                            all = false
                        }
                    }
                    result = all
                } else {
                    result = false
                }
            case .group:
                result = result && old.groupStatus[step.name] == "succeeded"
                    && step.members.allSatisfy { member in stepByName[member].map { isComplete($0) } ?? false }
            case .join:
                result = result && old.joinStatus[step.name] == "succeeded"
            }
            complete[index] = result
            return result
        }

        /// A killed engine's record has no stashes: a task is restored only
        /// if everything downstream of it is too (nothing that runs again
        /// could read its stash), until no more change.
        mutating func keepOnlyWhatNothingRunningReads() {
            // `finally` always runs: what it needs is not restored either.
            for step in plan.finallySteps {
                for need in step.needs {
                    guard let index = stepByName[need], complete[index] == true else { continue }
                    complete[index] = false
                    restored[need] = nil
                }
            }
            var changedAny = true
            while changedAny {
                changedAny = false
                for index in plan.steps.indices where complete[index] == true {
                    guard dependents[index].contains(where: { complete[$0] != true }) else { continue }
                    complete[index] = false
                    restored[plan.steps[index].name] = nil
                    changedAny = true
                }
            }
        }

        /// Restores a task that succeeded, if its identity is unchanged.
        private mutating func restore(task name: String) -> Bool {
            guard let task = oldTasks[name], task.status == "succeeded", task.item == nil else { return false }
            guard let identity = identities[name] else { return false }
            if old.planIdentity != nil {
                // Checked as a whole already; no stash to restore (see `keepOnlyWhatNothingRunningReads`).
                restored[name] = RestoredTask(item: nil, stdout: "", exitCode: 0, outputs: [], duration: task.duration, wholeStdout: nil)
                return true
            }
            guard task.identity == identity.hash else {
                changed.append((name, task.identity == nil ? ["not recorded"] : identity.changes(from: task.identityParts)))
                return false
            }
            restored[name] = RestoredTask(item: nil, stdout: task.stdout, exitCode: task.exitCode, outputs: task.outputs, duration: task.duration, wholeStdout: task.wholeStdout)
            return true
        }

        private mutating func restore(member task: ResumeSource.Task, template: String) -> Bool {
            guard let templateIdentity = identities[template] else { return false }
            let fanOut = fanOutIdentities[template] ?? FanOutIdentity(template: templateIdentity)
            fanOutIdentities[template] = fanOut
            let identity = fanOut.member(item: task.item)
            if task.leftOut {
                // No row: its identity is the group's template identity with its item.
                guard let templateIdentity = identities[template], let old = task.group.flatMap({ self.old.memberIdentity[$0] }) else {
                    changed.append((task.name, ["not recorded"]))
                    return false
                }
                guard old.hash == templateIdentity.hash else {
                    changed.append((task.name, templateIdentity.changes(from: old.parts)))
                    return false
                }
                restored[task.name] = RestoredTask(item: task.item, stdout: "", exitCode: 0, outputs: [], duration: nil, wholeStdout: nil)
                return true
            }
            guard task.identity == identity.hash else {
                changed.append((task.name, task.identity == nil ? ["not recorded"] : identity.changes(from: task.identityParts)))
                return false
            }
            restored[task.name] = RestoredTask(item: task.item, stdout: task.stdout, exitCode: task.exitCode, outputs: task.outputs, duration: task.duration, wholeStdout: task.wholeStdout)
            return true
        }
    }
}

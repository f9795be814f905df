import FlowrunModel

/// `sequential: true` groups on Argo (docs/CLUSTER.md): each static member
/// depends on the one written before it, the fan-out on the last of them,
/// and the group's DAG runs one pod at a time (`parallelism: 1`).
extension ArgoCompiler {
    mutating func emulateSequence(of group: GroupDefinition) {
        problems.emulate(
            "group '\(group.name)' is sequential: on Argo its members depend on each other in written order and its DAG has "
                + "parallelism 1, but a member with 'when: always' or 'when: failure' still runs after a failure, and a fan-out's later "
                + "items are not skipped when one fails",
            at: group.location)
    }
}

import FlowrunModel

/// Named semaphores as Argo semaphores: one ConfigMap key per pool holding
/// its capacity, and `synchronization.semaphores` on each user's template.
///
/// Argo semaphores count holders, not weights. A pool that any task uses
/// with a weight above 1 is emulated conservatively so its capacity is
/// never exceeded: the pool's key holds `capacity - (heaviest weight - 1)`,
/// and every weighted user also holds a second key of capacity 1, so at most
/// one weighted user runs at a time and it always finds its weight free.
struct ArgoSemaphores {
    struct Pool {
        var name: String
        var key: String
        var capacity: Int
        /// The key weighted users also hold; nil when every use weighs 1.
        var weightedKey: String?
        var heaviest: Int
    }

    let configMapName: String
    private(set) var pools: [Pool] = []

    init(workflow: Workflow, configMapName: String, problems: inout ArgoExportProblems) {
        self.configMapName = configMapName
        var heaviest: [String: SemaphoreUse] = [:]
        // A family's pools are the names tasks use (keys are fixed before the run).
        let table = SemaphoreTable(workflow.semaphores)
        var declarations = workflow.semaphores.filter { !SemaphoreTable.isFamily($0.name) }
        // A name computed per member (SPEC §15) has no Argo form: its members share one key.
        var sharedKeys: [(use: String, key: String)] = []
        for task in Self.allTasks(of: workflow) {
            for use in task.semaphores {
                if use.weight > (heaviest[use.name]?.weight ?? 1) { heaviest[use.name] = use }
                if use.computedName != nil {
                    guard !declarations.contains(where: { $0.name == use.name }) else { continue }
                    let candidates = table.candidates(forPattern: use.namePattern)
                    let capacity = candidates.map(\.capacity).min() ?? 1
                    declarations.append(SemaphoreDeclaration(name: use.name, capacity: capacity, location: use.location))
                    sharedKeys.append((use.name, Self.configMapKey(use.namePattern) + ".shared"))
                    problems.emulate(
                        "Argo has no pool per member: every member of '\(use.name)' shares one pool of \(capacity) on Argo, "
                            + "so no pool exceeds \(capacity) but different pools no longer run side by side",
                        at: use.location)
                    continue
                }
                if let pool = table.pool(named: use.name), pool.family != nil, !declarations.contains(where: { $0.name == use.name }) {
                    declarations.append(SemaphoreDeclaration(name: use.name, capacity: pool.capacity, location: use.location))
                }
            }
        }
        var keys = Set(declarations.map(\.name))
        for declaration in declarations {
            var key = declaration.name
            if let shared = sharedKeys.first(where: { $0.use == declaration.name }) {
                key = shared.key
                while keys.contains(key) { key += "-" }
                keys.insert(key)
            }
            var pool = Pool(name: declaration.name, key: key, capacity: declaration.capacity, weightedKey: nil, heaviest: 1)
            if let use = heaviest[declaration.name] {
                var weightedKey = key + ".weighted"
                while keys.contains(weightedKey) { weightedKey += "-" }
                keys.insert(weightedKey)
                pool.weightedKey = weightedKey
                pool.heaviest = use.weight
                pool.capacity = declaration.capacity - (use.weight - 1)
                problems.emulate(
                    "Argo semaphores have no weights: pool '\(declaration.name)' (capacity \(declaration.capacity)) gets \(pool.capacity) "
                        + "slots of weight 1, and tasks with a weight above 1 also hold '\(weightedKey)' (capacity 1), so the pool "
                        + "never exceeds \(declaration.capacity) but runs fewer light tasks",
                    at: use.location)
            }
            pools.append(pool)
        }
    }

    /// `synchronization:` for a task's template, nil when it uses no pool.
    func synchronization(for task: TaskDefinition) -> ManifestValue? {
        var references: [ManifestValue] = []
        for use in task.semaphores {
            guard let pool = pools.first(where: { $0.name == use.name }) else { continue }
            references.append(reference(pool.key))
            if use.weight > 1, let weightedKey = pool.weightedKey { references.append(reference(weightedKey)) }
        }
        guard !references.isEmpty else { return nil }
        return .map([("semaphores", .list(references))])
    }

    private func reference(_ key: String) -> ManifestValue {
        .map([("configMapKeyRef", .map([("name", .string(configMapName)), ("key", .string(key))]))])
    }

    /// The ConfigMap's `data`: each key's capacity (ConfigMap values are strings).
    var data: ManifestValue {
        var pairs: [(key: String, value: ManifestValue)] = []
        for pool in pools {
            pairs.append((pool.key, .string(String(pool.capacity))))
            if let weightedKey = pool.weightedKey { pairs.append((weightedKey, .string("1"))) }
        }
        return .map(pairs)
    }

    /// A ConfigMap key for a name pattern: `*` and what a key cannot hold become `x` and `-`.
    static func configMapKey(_ pattern: String) -> String {
        String(pattern.map { character -> Character in
            if character == "*" { return "x" }
            return character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_" || character == ".") ? character : "-"
        })
    }

    static func allTasks(of workflow: Workflow) -> [TaskDefinition] {
        workflow.mainTasks + workflow.groups.compactMap(\.fanOut?.template) + workflow.finally
    }
}

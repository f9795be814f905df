import FlowrunModel

/// The semaphores a step holds, as the plan can tell them: a declared pool,
/// a pool of a family, or a name computed at run time (SPEC §15).
extension Planner {
    static func semaphoreLimit(_ use: SemaphoreUse, table: SemaphoreTable) -> SemaphoreLimit {
        guard use.computedName != nil else {
            let pool = table.pool(named: use.name)
            return SemaphoreLimit(name: use.name, weight: use.weight, capacity: pool?.capacity ?? 0, family: pool?.family, sharedBy: [pool?.family ?? use.name])
        }
        let candidates = table.candidates(forPattern: use.namePattern)
        return SemaphoreLimit(
            name: use.name, weight: use.weight, capacity: candidates.map(\.capacity).max() ?? 0,
            family: candidates.count == 1 ? candidates[0].family : nil, isComputed: true, sharedBy: candidates.map { $0.family ?? $0.name })
    }

    /// A fan-out's computed semaphore names, filled in for each item when the
    /// plan knows the items and what the names read: the pools, and the
    /// family (or literal pool) each is, in place of every candidate.
    static func namePools(of limits: inout TaskLimits, template: TaskDefinition, source: FanOutSource, table: SemaphoreTable, vars: [Variable]) {
        for (position, use) in template.semaphores.enumerated() where use.computedName != nil {
            guard let pools = staticPools(of: use, source: source, vars: vars) else { continue }
            let resolved = pools.compactMap { table.pool(named: $0) }
            limits.semaphores[position].pools = pools
            // A name that matches nothing fails its member when it is ready: said by the dry run.
            limits.semaphores[position].unmatched = pools.filter { table.pool(named: $0) == nil }
            guard resolved.count == pools.count else { continue }
            limits.semaphores[position].capacity = resolved.map(\.capacity).max() ?? 0
            let families = Set(resolved.map { $0.family ?? $0.name })
            limits.semaphores[position].family = families.count == 1 ? resolved.first?.family : nil
            var sharedBy: [String] = []
            for pool in resolved where !sharedBy.contains(pool.family ?? pool.name) { sharedBy.append(pool.family ?? pool.name) }
            limits.semaphores[position].sharedBy = sharedBy
        }
    }

    /// The pools a fan-out's members take by a computed name, when the items
    /// and everything the name reads are known before the run; nil otherwise.
    static func staticPools(of use: SemaphoreUse, source: FanOutSource, vars: [Variable]) -> [String]? {
        guard let template = use.computedName, let count = source.staticCount, count <= maximumItemsNamed else { return nil }
        // A computed var (`{sh: …}`) is known only once its task ran.
        for operand in template.operands {
            if case .variable(let name) = operand.path, vars.contains(where: { $0.name == name && $0.command != nil }) { return nil }
        }
        var pools: [String] = []
        var seen = Set<String>()
        for index in 0..<count {
            let item: FanOutItem
            switch source {
            case .list(let items): item = .text(items[index])
            case .records(let items): item = items[index]
            case .range(let low, _): item = .text(String(low + index))
            case .expression: return nil
            }
            guard let name = MemberNaming.render(template, item: item, index: index, vars: vars) else { return nil }
            if seen.insert(name).inserted { pools.append(name) }
        }
        return pools
    }

    /// Past this many items the dry run does not name each member's pool.
    static let maximumItemsNamed = 10_000
}

/// The "must finish first" relation between a workflow's tasks, groups and
/// joins, by index. Validation finds cycles and checks that expressions only
/// read what is already settled; planning orders the work with it.
public struct DependencyGraph: Sendable {
    public enum Kind: String, Sendable {
        case task, group, join
        /// The template of a fan-out, standing for all of its members (`G[*]`).
        case fanOut = "fan-out"
    }

    public struct Node: Sendable {
        public var name: String
        public var kind: Kind
        public var location: SourceLocation
        /// The group a task or fan-out belongs to.
        public var group: String?
    }

    public private(set) var nodes: [Node] = []
    /// `dependencies[i]`: the nodes `i` waits for, in declaration order.
    public private(set) var dependencies: [[Int]] = []
    public private(set) var indexByName: [String: Int] = [:]

    /// The main phase of `workflow` (everything but `finally`). References to
    /// unknown names are left out; validation reports them.
    public init(mainPhaseOf workflow: Workflow) {
        // Tasks by index, fields read in place: `for task in` would copy each
        // definition (a retain per field), a tenth of validating 100,000 tasks.
        let tasks = workflow.tasks
        let count = tasks.count + workflow.joins.count + workflow.groups.reduce(0) { $0 + 2 + $1.members.count }
        nodes.reserveCapacity(count)
        dependencies.reserveCapacity(count)
        indexByName.reserveCapacity(count)
        for index in tasks.indices { add(tasks[index].name, .task, tasks[index].location, group: nil) }
        for group in workflow.groups {
            add(group.name, .group, group.location, group: nil)
            for member in group.members { add(member.name, .task, member.location, group: group.name) }
            if let fanOut = group.fanOut { add(fanOut.template.name, .fanOut, fanOut.template.location, group: group.name) }
        }
        for join in workflow.joins { add(join.name, .join, join.location, group: nil) }

        for index in tasks.indices { connect(tasks[index].name, to: tasks[index].needs.map(\.value)) }
        for group in workflow.groups {
            let groupNeeds = group.needs.map(\.value)
            var memberNames = group.members.map(\.name)
            for member in group.members {
                connect(member.name, to: member.needs.map(\.value).filter { $0 != group.name } + groupNeeds)
            }
            if let fanOut = group.fanOut {
                connect(fanOut.template.name, to: fanOut.template.needs.map(\.value).filter { $0 != group.name } + groupNeeds)
                memberNames.append(fanOut.template.name)
            }
            connect(group.name, to: memberNames + groupNeeds)
        }
        for join in workflow.joins { connect(join.name, to: join.wait.map(\.value)) }
    }

    /// The `finally` phase: finally tasks and their needs among themselves.
    public init(finallyPhaseOf workflow: Workflow) {
        for task in workflow.finally { add(task.name, .task, task.location, group: nil) }
        for task in workflow.finally { connect(task.name, to: task.needs.map(\.value)) }
    }

    private mutating func add(_ name: String, _ kind: Kind, _ location: SourceLocation, group: String?) {
        guard indexByName[name] == nil else { return }
        indexByName[name] = nodes.count
        nodes.append(Node(name: name, kind: kind, location: location, group: group))
        dependencies.append([])
    }

    private mutating func connect(_ name: String, to needs: [String]) {
        guard !needs.isEmpty, let index = indexByName[name] else { return }
        var seen = Set(dependencies[index])
        for need in needs {
            guard let target = indexByName[need], target != index, seen.insert(target).inserted else { continue }
            dependencies[index].append(target)
        }
    }

    /// Answers "must `target` settle before `source` starts?" for many
    /// readers: a short search from the reader first (most reads are of near
    /// needs), else the set of everything that waits for `target`, computed
    /// once per target — so a long chain whose every task reads its first
    /// task costs linear time, not quadratic.
    public final class Reachability {
        private let graph: DependencyGraph
        private lazy var dependents: [[Int]] = {
            var dependents = [[Int]](repeating: [], count: graph.nodes.count)
            for (node, needs) in graph.dependencies.enumerated() {
                for need in needs { dependents[need].append(node) }
            }
            return dependents
        }()
        private var waitingFor: [Int: Set<Int>] = [:]

        public init(_ graph: DependencyGraph) {
            self.graph = graph
        }

        public func reaches(from source: Int, to target: Int) -> Bool {
            var visited = Set([source])
            var queue = graph.dependencies[source]
            while let next = queue.popLast() {
                if next == target { return true }
                if visited.insert(next).inserted { queue.append(contentsOf: graph.dependencies[next]) }
                if visited.count > 64 { return closure(of: target).contains(source) }
            }
            return false
        }

        /// Every node that waits for `target`, directly or not.
        private func closure(of target: Int) -> Set<Int> {
            if let known = waitingFor[target] { return known }
            var found = Set<Int>()
            var queue = dependents[target]
            while let next = queue.popLast() {
                if found.insert(next).inserted { queue.append(contentsOf: dependents[next]) }
            }
            waitingFor[target] = found
            return found
        }
    }

    /// Every cycle found, each as a path of node indices whose last element
    /// depends on the first (one per strongly connected tangle).
    public func cycles() -> [[Int]] {
        enum Color { case white, grey, black }
        var color = [Color](repeating: .white, count: nodes.count)
        var cycles: [[Int]] = []
        var reported = Set<Int>()
        for start in nodes.indices where color[start] == .white {
            // Iterative depth-first search: 100,000-long chains must not overflow the stack.
            var stack: [(node: Int, next: Int)] = [(start, 0)]
            color[start] = .grey
            while let top = stack.last {
                let edges = dependencies[top.node]
                if top.next < edges.count {
                    stack[stack.count - 1].next += 1
                    let target = edges[top.next]
                    switch color[target] {
                    case .white:
                        color[target] = .grey
                        stack.append((target, 0))
                    case .grey:
                        let path = Array(stack.map(\.node).drop { $0 != target })
                        if reported.isDisjoint(with: path) {
                            cycles.append(path)
                            reported.formUnion(path)
                        }
                    case .black:
                        break
                    }
                } else {
                    color[top.node] = .black
                    stack.removeLast()
                }
            }
        }
        return cycles
    }

    /// Each node's stage: 0 for nodes that wait for nothing, else one more than
    /// the latest stage they wait for. Requires an acyclic graph.
    public func stages() -> [Int] {
        var stage = [Int](repeating: 0, count: nodes.count)
        var remaining = dependencies.map(\.count)
        var dependents = [[Int]](repeating: [], count: nodes.count)
        for (node, needs) in dependencies.enumerated() {
            for need in needs { dependents[need].append(node) }
        }
        var ready = nodes.indices.filter { remaining[$0] == 0 }
        var cursor = 0
        while cursor < ready.count {
            let node = ready[cursor]
            cursor += 1
            for dependent in dependents[node] {
                stage[dependent] = max(stage[dependent], stage[node] + 1)
                remaining[dependent] -= 1
                if remaining[dependent] == 0 { ready.append(dependent) }
            }
        }
        return stage
    }
}

#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues

/// Reading what tasks, groups and joins left behind: for expressions, join
/// blocks, `groups.G.results` and the summary.
extension RunEngine {
    /// `field` as written after a name: `stdout`, `outputs.KEY`, `status`,
    /// `exit_code`, `duration`; `results` of a group; `timed_out`, `succeeded` of a join.
    func stashValue(of index: Int, field: String) -> String? {
        let node = nodes[index]
        switch field {
        case "status": return node.status.rawValue
        case "stdout": return node.stash.stdout
        case "exit_code": return node.stash.exitCode.map(String.init) ?? ""
        case "duration": return node.stash.duration.map(JSONText.number) ?? ""
        case "results": return groupResultsJSON(index)
        case "timed_out": return node.joinTimedOut ? "true" : "false"
        case "succeeded": return String(node.members.filter { nodes[$0].status == .succeeded }.count)
        default:
            guard field.hasPrefix("outputs.") else { return nil }
            return node.stash.output(String(field.dropFirst(8))) ?? ""
        }
    }

    /// The value an operand reads for the node `reader` (nil for a group's
    /// `foreach`); `item`/`index` are a fan-out member's.
    func operandValue(_ path: OperandPath, item: FanOutItem?, index: Int?) -> ExpressionValue {
        switch path {
        case .variable(let name):
            return .string(plan.workflow.vars.last { $0.name == name }?.value ?? "")
        case .environment(let name):
            return .string(getenv(name).map { String(cString: $0) } ?? "")
        case .item:
            return .string(item?.text ?? "")
        case .itemField(let path):
            // A field no item has fails the group before it starts; one this item lacks reads ''.
            return .string(item?.field(at: path)?.text ?? "")
        case .index:
            return index.map { .number(Double($0)) } ?? .string("")
        case .host(let fact):
            return HostFacts.value(of: fact)
        case .arguments, .argument:
            // Filled in by the planner (`Planner.fillArguments`): a plan has none left.
            return .string("")
        case .task(let name, let field):
            guard let target = indexByName[name] else { return .string("") }
            switch field {
            case .stdout: return .string(nodes[target].stash.stdout)
            case .status: return .string(nodes[target].status.rawValue)
            case .exitCode: return nodes[target].stash.exitCode.map { .number(Double($0)) } ?? .string("")
            case .duration: return nodes[target].stash.duration.map { .number($0) } ?? .string("")
            case .output(let key): return .string(nodes[target].stash.output(key) ?? "")
            }
        case .group(let name, let field):
            guard let target = indexByName[name] else { return .string("") }
            switch field {
            case .status: return .string(nodes[target].status.rawValue)
            case .results: return .json(groupResultsJSON(target))
            }
        case .join(let name, let field):
            guard let target = indexByName[name] else { return .string("") }
            switch field {
            case .status: return .string(nodes[target].status.rawValue)
            case .timedOut: return .boolean(nodes[target].joinTimedOut)
            case .succeeded: return .number(Double(nodes[target].members.filter { nodes[$0].status == .succeeded }.count))
            }
        }
    }

    /// A value's whole length when the stash holds only part of it: a task's
    /// stdout over 1 MiB, or a group's results holding one (nil: the value is whole).
    func wholeByteCount(_ path: OperandPath) -> Int? {
        switch path {
        case .task(let name, .stdout):
            guard let target = indexByName[name] else { return nil }
            return nodes[target].stash.oversizedStdout?.value.byteCount
        case .group(let name, .results):
            guard let target = indexByName[name] else { return nil }
            let members = nodes[target].members
            // The common case, no member over the limit: measured from the value itself.
            guard members.contains(where: { nodes[$0].stash.oversizedStdout != nil }) else { return nil }
            let missing = members.reduce(0) { sum, member in
                sum + (nodes[member].stash.oversizedStdout.map { $0.value.byteCount - nodes[member].stash.stdout.utf8.count } ?? 0)
            }
            return groupResultsJSON(target).utf8.count + missing
        default:
            return nil
        }
    }

    /// `groups.G.results`: one object per member in index order.
    func groupResultsJSON(_ group: Int) -> String {
        GroupResults.json(nodes[group].members.map { member in
            let node = nodes[member]
            return GroupResults.Member(name: node.name, item: node.item?.text, status: node.status, stdout: node.stash.stdout, outputs: node.stash.outputs)
        })
    }
}

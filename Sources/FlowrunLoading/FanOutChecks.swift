import FlowrunModel

/// The checks on fan-outs that need the whole workflow: `item.KEY` reads a
/// field some item has, static member names are unique, and a `foreach` of
/// one spaced string gets a pointer to `split:`.
struct FanOutChecks {
    let workflow: Workflow
    private var diagnostics: [Diagnostic] = []

    init(workflow: Workflow) {
        self.workflow = workflow
    }

    mutating func check() -> [Diagnostic] {
        for group in workflow.groups {
            guard let fanOut = group.fanOut else { continue }
            checkFields(of: fanOut, in: group)
            checkUnsplitString(fanOut)
        }
        checkMemberNames()
        return diagnostics
    }

    // MARK: - item.KEY

    private mutating func checkFields(of fanOut: FanOut, in group: GroupDefinition) {
        let operands = fanOut.template.itemFieldOperands
        guard !operands.isEmpty else { return }
        switch fanOut.source {
        case .expression:
            return  // read at run time: a field no item has fails the group then
        case .list, .range:
            for operand in operands {
                diagnostics.append(.error(
                    "'\(operand.text)' reads a field, but the items of group '\(group.name)' are text; write them as mappings ({os: linux}) or use a matrix",
                    at: operand.location))
            }
        case .records(let items):
            for operand in operands {
                guard case .itemField(let path) = operand.path, !items.contains(where: { $0.field(at: path) != nil }) else { continue }
                // The keys one level up, in the order the items first have them.
                var keys: [String] = []
                var seen = Set<String>()
                for item in items {
                    for field in item.field(at: Array(path.dropLast()))?.fields ?? [] where seen.insert(field.key).inserted { keys.append(field.key) }
                }
                let last = path.last ?? ""
                let prefix = path.dropLast().map { "item." + $0 }.last.map { "\($0) has" } ?? "the items have"
                let known = keys.isEmpty ? "\(prefix) no fields" : "\(prefix) \(keys.joined(separator: ", "))"
                diagnostics.append(.error(
                    "no item of group '\(group.name)' has the field '\(path.joined(separator: "."))'\(Suggestion.hint(for: last, in: keys)); \(known)",
                    at: operand.location))
            }
        }
    }

    // MARK: - split

    /// `foreach: ${{ vars.services }}` whose value is one line of words reads
    /// as one item: go-task's users expect it split, so point at `split:`.
    private mutating func checkUnsplitString(_ fanOut: FanOut) {
        guard fanOut.split == nil, case .expression(let template) = fanOut.source, template.segments.count == 1,
              case .expression(.operand(let operand), _)? = template.segments.first, case .variable(let name) = operand.path,
              let value = workflow.vars.last(where: { $0.name == name })?.value,
              !value.contains("\n"), !value.hasPrefix("[") else { return }
        let words = FanOutSplit.whitespace.items(value)
        guard words.count > 1 else { return }
        diagnostics.append(.warning(
            "foreach reads '\(operand.text)' ('\(value)') as one item per line, so as 1 item; add 'split: whitespace' to read its \(words.count) words as items",
            at: fanOut.location))
    }

    // MARK: - Member names

    /// Names known before the run must be unique among themselves and among
    /// every task, group and join: a duplicate is never renamed.
    private mutating func checkMemberNames() {
        // Only a named template or records can collide: without either, no
        // table of every name (2.3 MB at 20,000 tasks) is built.
        guard workflow.groups.contains(where: { $0.fanOut.map { $0.template.nameTemplate != nil || $0.source.isRecords } ?? false }) else { return }
        var owners: [String: String] = [:]
        for task in workflow.tasks { owners[task.name] = "the task at \(task.location.line):\(task.location.column)" }
        for task in workflow.finally { owners[task.name] = "the finally task at \(task.location.line):\(task.location.column)" }
        for join in workflow.joins { owners[join.name] = "the join at \(join.location.line):\(join.location.column)" }
        for group in workflow.groups {
            owners[group.name] = "the group at \(group.location.line):\(group.location.column)"
            for member in group.members { owners[member.name] = "the task at \(member.location.line):\(member.location.column)" }
        }
        for group in workflow.groups {
            guard let fanOut = group.fanOut else { continue }
            // Without `name:`, a text item's name is GROUP[INDEX] and a record's
            // GROUP[k=v,…]: no declared name holds '[', so only records can collide, among themselves.
            let template = fanOut.template.nameTemplate
            guard template != nil || fanOut.source.isRecords else { continue }
            // A huge range is checked as the run starts it, without a list of its names (RunEngine+MemberNames.swift).
            guard (fanOut.source.staticCount ?? 0) <= NumericBounds.namesCheckedAtLoad else { continue }
            guard let names = MemberNaming.staticNames(of: group, vars: workflow.vars) else { continue }
            var first: [String: Int] = [:]
            first.reserveCapacity(names.count)
            for (index, name) in names.enumerated() {
                if let earlier = first[name] {
                    let how = template == nil
                        ? "add a name: to the task that tells them apart (e.g. with ${{ index }})"
                        : "make name: tell them apart (e.g. with ${{ index }})"
                    diagnostics.append(.error(
                        "members \(earlier) and \(index) of group '\(group.name)' would both be named '\(name)'; member names must be unique: \(how)",
                        at: template?.location ?? fanOut.location))
                    break
                }
                first[name] = index
                if let owner = owners[name] {
                    diagnostics.append(.error(
                        "member \(index) of group '\(group.name)' would be named '\(name)', which is already the name of \(owner); member names must differ from every other name",
                        at: template?.location ?? fanOut.location))
                    break
                }
            }
            for (name, index) in first.sorted(by: { $0.value < $1.value }) {
                owners[name] = owners[name] ?? "member \(index) of group '\(group.name)'"
            }
        }
    }
}

extension FanOutSource {
    var isRecords: Bool {
        if case .records = self { return true }
        return false
    }
}

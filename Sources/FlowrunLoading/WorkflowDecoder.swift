import FlowrunYAML
import FlowrunModel

/// Turns a YAML tree into a `Workflow`, collecting every problem instead of
/// stopping at the first; the checks that need the whole workflow
/// (references, cycles, limits) run afterwards in `WorkflowChecker`.
struct WorkflowDecoder {
    let file: String
    let source: SourceText
    let names: NameTable
    var diagnostics: [Diagnostic] = []
    /// `templates:`, read before any task so that calls can be expanded.
    var taskTemplates: [String: TaskTemplate] = [:]
    /// Set while a template call's task is decoded: what `params.NAME` stands for.
    var parameterScope: TemplateParameterScope?
    /// Where checking the templates on their own found problems: a call
    /// does not report them again.
    var templateProblemLocations: Set<SourceLocation> = []
    /// A template's keys split at their `${{ }}` once, by the key's place,
    /// for every call: with the text they were split from, since a key whose
    /// parameters were filled in as text (`sources: ["src/${{ params.name }}.c"]`)
    /// has a different text at the same place in each call.
    var templatePieces: [SourceLocation: (text: String, pieces: [TemplatePiece])] = [:]
    /// The shell contexts of a `run:` script's values, by where the script is
    /// and the order of its text and values: a template's calls share them.
    var shellContexts: [ShellContextKey: (texts: [String], points: [ShellInsertionPoint])] = [:]
    /// Text made by filling in template calls so far, against `maxExpandedBytes`.
    var expandedBytes = 0
    var reportedExpansionLimit = false
    /// `includes:`, merged after decoding by `WorkflowIncludes`.
    var includes: [IncludeEntry] = []
    /// Decoding a file another one includes: the run's own keys are refused.
    var isIncluded = false

    init(file: String, source: SourceText, names: NameTable) {
        self.file = file
        self.source = source
        self.names = names
    }

    static let topLevelKeys = [
        "name", "description", "max_parallel", "timeout", "fail_fast", "kill_grace", "shell",
        "env", "vars", "secrets", "semaphores", "tasks", "groups", "joins", "finally",
        "default", "capacity",
        "templates", "dotenv", "includes", "executor", "slurm",
    ]

    mutating func decode(_ root: YAMLNode, defaultName: String) -> Workflow {
        var workflow = Workflow(file: file, name: defaultName)
        guard let fields = fields(of: root, what: "the workflow", allowed: Self.topLevelKeys) else { return workflow }

        if isIncluded { refuseKeysOfTheRun(in: fields) }
        if let node = fields["includes"]?.value { includes = includeEntries(node) }
        if let node = fields["name"]?.value, let name = string(node, what: "name") { workflow.name = name }
        if let node = fields["description"]?.value { workflow.description = string(node, what: "description") }
        if let node = fields["max_parallel"]?.value {
            if node.scalar?.text == "cpus", node.scalar?.style == .plain {
                workflow.maxParallelIsCPUCount = true
            } else if let scalar = node.scalar, scalar.int == nil, !scalar.isNull, !scalar.text.contains("${{"),
                      !scalar.text.allSatisfy({ $0.isNumber || $0 == "-" || $0 == "+" }) {
                error("max_parallel takes a whole number or cpus (the CPU count), found \(describe(node))\(Suggestion.hint(for: scalar.text, in: ["cpus"]))", at: node)
            } else {
                workflow.maxParallel = int(node, what: "max_parallel", in: NumericBounds.slots)
            }
        }
        if let node = fields["default"]?.value { workflow.defaultTargets = references(node, what: "default") }
        if let node = fields["timeout"]?.value { workflow.timeout = positiveDuration(node, what: "timeout") }
        if let node = fields["fail_fast"]?.value, let value = bool(node, what: "fail_fast") { workflow.failFast = value }
        if let node = fields["kill_grace"]?.value, let value = duration(node, what: "kill_grace") { workflow.killGrace = value.value }
        if let node = fields["shell"]?.value, let words = workflowShell(node) {
            workflow.shellCommand = words
        }
        if let node = fields["env"]?.value { workflow.env = environment(node, context: .workflow) }
        if let node = fields["executor"]?.value { workflow.executor = executor(node) }
        if let node = fields["slurm"]?.value { workflow.slurm = slurmSettings(node) }
        if let node = fields["dotenv"]?.value { workflow.dotenv = dotenvFiles(node) }
        if let node = fields["vars"]?.value { workflow.vars = variables(node) }
        if let node = fields["secrets"]?.value { workflow.secrets = secrets(node, vars: workflow.vars, env: workflow.env) }
        if let node = fields["semaphores"]?.value { workflow.semaphores = semaphoreDeclarations(node) }
        if let pair = fields["capacity"] { workflow.capacity = capacity(pair) }
        if let node = fields["templates"]?.value { taskTemplates = templates(node) }
        if let node = fields["tasks"]?.value {
            workflow.tasks = tasks(named(node, what: "tasks"), context: .main)
        }
        if let node = fields["groups"]?.value {
            workflow.groups = named(node, what: "groups").compactMap { group($0.key, $0.value) }
        }
        if let node = fields["joins"]?.value {
            workflow.joins = named(node, what: "joins").compactMap { join($0.key, $0.value) }
        }
        if let node = fields["finally"]?.value {
            workflow.finally = tasks(named(node, what: "finally"), context: .finally)
        }
        refuseSecretsOnSlurm(workflow)
        return workflow
    }

    /// Each entry's task, in order, those with errors left out. Into an array
    /// sized up front: a task definition is about a kilobyte, and growing
    /// the array would copy them all a few times.
    private mutating func tasks(_ entries: [(key: Located<String>, value: YAMLNode)], context: TaskContext) -> [TaskDefinition] {
        var tasks: [TaskDefinition] = []
        tasks.reserveCapacity(entries.count)
        for entry in entries {
            if let task = task(entry.key, entry.value, context: context) { tasks.append(task) }
        }
        return tasks
    }

    /// The entries of a `tasks:`/`groups:`/`joins:`/`finally:` mapping, with
    /// names checked against SPEC §1's pattern.
    mutating func named(_ node: YAMLNode, what: String) -> [(key: Located<String>, value: YAMLNode)] {
        if case .scalar(let scalar) = node.content, scalar.isNull { return [] }
        guard let pairs = mapping(node, what: what) else { return [] }
        var seen = Set<String>()
        // Sized once: grown by doubling, 20,000 tasks' entries held up to 3.5 MB.
        var named: [(key: Located<String>, value: YAMLNode)] = []
        named.reserveCapacity(pairs.count)
        for pair in pairs {
            guard let name = pair.key.scalar?.text else {
                error("a name in \(what) must be a plain string, found \(pair.key.kindDescription)", at: pair.key)
                continue
            }
            // `$` first: the substring search costs some 20 times a byte scan, for every name.
            if name.utf8.contains(UInt8(ascii: "$")), name.contains("${{") {
                error("a name in \(what) is read as written and does not evaluate ${{ }}; to name fan-out members from their items, give the group's 'task:' a 'name:'", at: pair.key)
            } else if !Self.isValidName(name) {
                error("'\(name)' is not a valid name: use letters, digits, '_', '.' and '-', not starting with '.' or '-'", at: pair.key)
            }
            // The YAML loader has already reported a key repeated in one mapping.
            guard seen.insert(name).inserted else { continue }
            named.append((Located(name, at: location(pair.key)), pair.value))
        }
        return named
    }

    /// `[A-Za-z0-9_][A-Za-z0-9_.-]*`
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first else { return false }
        func isWordCharacter(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_")
        }
        return isWordCharacter(first) && name.unicodeScalars.allSatisfy { isWordCharacter($0) || $0 == "." || $0 == "-" }
    }

    private mutating func variables(_ node: YAMLNode) -> [Variable] {
        guard let pairs = mapping(node, what: "vars") else { return [] }
        return pairs.compactMap { pair in
            guard let name = pair.key.scalar?.text else { return nil }
            if pair.value.mapping != nil { return mappedVariable(name, pair) }
            guard let scalar = pair.value.scalar else {
                error("the value of vars.\(name) must be a string, a number or {sh: COMMAND}, found \(pair.value.kindDescription)", at: pair.value)
                return nil
            }
            return Variable(name: name, value: scalar.isNull ? "" : scalar.text, location: location(pair.key))
        }
    }

    private mutating func semaphoreDeclarations(_ node: YAMLNode) -> [SemaphoreDeclaration] {
        guard let pairs = mapping(node, what: "semaphores") else { return [] }
        return pairs.compactMap { pair in
            guard let name = pair.key.scalar?.text else { return nil }
            // A family (`batch-*`) is a name with `*` standing for any run of characters.
            if !Self.isValidName(String(name.map { $0 == "*" ? "x" : $0 })) {
                error("'\(name)' is not a valid semaphore name", at: pair.key)
            }
            guard let capacity = int(pair.value, what: "the capacity of semaphore '\(name)'", in: NumericBounds.slots) else { return nil }
            return SemaphoreDeclaration(name: name, capacity: capacity, location: location(pair.key))
        }
    }
}

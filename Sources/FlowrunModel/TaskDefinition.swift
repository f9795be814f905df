/// One task as written: its action, dependencies, limits and retry policy.
public struct TaskDefinition: Sendable {
    public var name: String
    /// Where the task's name (its key) is written.
    public var location: SourceLocation
    public var action: TaskAction
    // The one-byte fields next to `action`, in the padding its 57 bytes leave.
    public var when: RunCondition = .success
    public var continueOnError: Bool = false
    public var needs: [Reference] = []
    public var retries: Int = 0
    public var semaphores: [SemaphoreUse] = []
    public var env: [EnvironmentEntry] = []
    /// The fields most tasks leave unset, behind one reference (nil while all
    /// are unset): inline they made a definition 448 bytes, held once per
    /// task by the workflow and once by the plan; without them it is 152.
    private var details: Shared<Details>?

    /// `if:` — evaluated once the needs are settled; false gives `skipped`.
    public var condition: Located<Expression>? {
        get { details?.value.condition }
        set { if newValue != nil || details != nil { changeDetails { $0.condition = newValue } } }
    }
    /// Per attempt.
    public var timeout: Located<Duration>? {
        get { details?.value.timeout }
        set { if newValue != nil || details != nil { changeDetails { $0.timeout = newValue } } }
    }
    public var retryDelay: Duration {
        get { details?.value.retryDelay ?? Details.defaultRetryDelay }
        set { if newValue != Details.defaultRetryDelay || details != nil { changeDetails { $0.retryDelay = newValue } } }
    }
    public var backoff: Double {
        get { details?.value.backoff ?? Details.defaultBackoff }
        set { if newValue != Details.defaultBackoff || details != nil { changeDetails { $0.backoff = newValue } } }
    }
    public var cwd: Template? {
        get { details?.value.cwd }
        set { if newValue != nil || details != nil { changeDetails { $0.cwd = newValue } } }
    }
    public var description: String? {
        get { details?.value.description }
        set { if newValue != nil || details != nil { changeDetails { $0.description = newValue } } }
    }
    /// Only in a fan-out template: the member's name, e.g. `fetch-${{ item }}`.
    public var nameTemplate: Template? {
        get { details?.value.nameTemplate }
        set { if newValue != nil || details != nil { changeDetails { $0.nameTemplate = newValue } } }
    }
    /// `sources:` — globs (templates) whose contents decide, with the task's
    /// identity and its `generates`, whether it is up to date.
    package var sources: [Template] {
        get { details?.value.sources ?? [] }
        set { if !newValue.isEmpty || details != nil { changeDetails { $0.sources = newValue } } }
    }
    /// `generates:` — globs of the files the task makes.
    package var generates: [Template] {
        get { details?.value.generates ?? [] }
        set { if !newValue.isEmpty || details != nil { changeDetails { $0.generates = newValue } } }
    }
    /// `shell:` — the program (and its arguments) that runs this task's
    /// script as a file; nil: the workflow's shell, `-c`.
    package var shell: [String]? {
        get { details?.value.shell }
        set { if newValue != nil || details != nil { changeDetails { $0.shell = newValue } } }
    }
    /// Set when the task is a call of a template (`uses:`).
    package var templateCall: TemplateCall? {
        get { details?.value.templateCall }
        set { if newValue != nil || details != nil { changeDetails { $0.templateCall = newValue } } }
    }
    /// `aliases: [b]` — other names the task can be run by (SPEC §15).
    package var aliases: [Reference] {
        get { details?.value.aliases ?? [] }
        set { if !newValue.isEmpty || details != nil { changeDetails { $0.aliases = newValue } } }
    }
    /// `prompt:` — a question answered y on a terminal (or `--yes`) before the run starts.
    package var prompt: Located<String>? {
        get { details?.value.prompt }
        set { if newValue != nil || details != nil { changeDetails { $0.prompt = newValue } } }
    }

    /// `resources:` — CPUs and memory one attempt needs (SPEC §13); nil: none declared.
    public var resources: ResourceRequest? {
        get { details?.value.resources }
        set { if newValue != nil || details != nil { changeDetails { $0.resources = newValue } } }
    }
    /// `retry_resources:` — how a retry after an out-of-memory death grows the memory.
    public var retryResources: RetryResources? {
        get { details?.value.retryResources }
        set { if newValue != nil || details != nil { changeDetails { $0.retryResources = newValue } } }
    }
    /// `service: true` — runs until the run ends; "done" for its dependents once ready (SPEC §14).
    package var isService: Bool {
        get { details?.value.isService ?? false }
        set { if newValue || details != nil { changeDetails { $0.isService = newValue } } }
    }
    /// `ready:` — a service's readiness probe (nil: ready as soon as it started).
    package var ready: ReadyProbe? {
        get { details?.value.ready }
        set { if newValue != nil || details != nil { changeDetails { $0.ready = newValue } } }
    }
    /// `executor:` as written on the task, or inherited from its group
    /// (nil: the workflow's, which applies to `run:` tasks only).
    public var executor: Located<ExecutorKind>? {
        get { details?.value.executor }
        set { if newValue != nil || details != nil { changeDetails { $0.executor = newValue } } }
    }

    private struct Details: Sendable {
        static let defaultRetryDelay: Duration = .seconds(1)
        static let defaultBackoff: Double = 2
        var condition: Located<Expression>?
        var timeout: Located<Duration>?
        var retryDelay = defaultRetryDelay
        var backoff = defaultBackoff
        var cwd: Template?
        var description: String?
        var nameTemplate: Template?
        var sources: [Template] = []
        var generates: [Template] = []
        var shell: [String]?
        var templateCall: TemplateCall?
        var aliases: [Reference] = []
        var prompt: Located<String>?
        var resources: ResourceRequest?
        var retryResources: RetryResources?
        var isService = false
        var ready: ReadyProbe?
        var executor: Located<ExecutorKind>?
    }

    /// A new `Details` with `change` applied: the old one may be shared by
    /// copies of this definition, which must not see the change.
    private mutating func changeDetails(_ change: (inout Details) -> Void) {
        var changed = details?.value ?? Details()
        change(&changed)
        details = Shared(changed)
    }

    public init(name: String, location: SourceLocation, action: TaskAction) {
        self.name = name
        self.location = location
        self.action = action
    }
}

/// What a task does: exactly one of `run`, `sleep` or `http`.
public enum TaskAction: Sendable {
    case run(Template)
    case sleep(SleepDuration)
    // Behind a reference: inline, a request (144 bytes) would make every task
    // definition that much larger, twice over while a plan is built.
    indirect case http(HTTPRequest)
}

/// `sleep: 2s` or `sleep: 1s..3s` (a random duration in that range).
public enum SleepDuration: Sendable, Equatable {
    case fixed(Duration)
    case range(Duration, Duration)
}

/// `http: {url, method, headers, body, expect}`.
public struct HTTPRequest: Sendable {
    public var url: Template
    public var method: String = "GET"
    public var headers: [(name: String, value: Template)] = []
    public var body: Template?
    public var expect: Int = 200

    public init(url: Template) {
        self.url = url
    }
}

/// `when:` — which outcomes of the needs let a task run.
public enum RunCondition: String, Sendable, CaseIterable {
    case success, failure, always
}

/// `semaphores: [db]` or `{network: 2}` — a slot weight in a named pool;
/// `["batch-${{ item.batch }}"]` names the pool at run time (SPEC §15).
public struct SemaphoreUse: Sendable {
    /// The pool's name; for a computed one, the name as written.
    public var name: String
    public var weight: Int
    public var location: SourceLocation
    /// The name when it reads `${{ }}`: filled in when the task is ready to run.
    package var computedName: Template?

    package init(name: String, weight: Int, location: SourceLocation, computedName: Template? = nil) {
        self.name = name
        self.weight = weight
        self.location = location
        self.computedName = computedName
    }

    /// The names a computed name can take, as a family pattern: each
    /// `${{ }}` read as `*` (`batch-*` for `batch-${{ item.batch }}`).
    package var namePattern: String {
        guard let computedName else { return name }
        return computedName.segments.map { segment in
            if case .text(let text) = segment { return text }
            return "*"
        }.joined()
    }
}

extension TaskDefinition {
    /// Every template the task fills in at run time (`run`, `env`, `cwd`,
    /// `http`, a fan-out `name`, computed semaphore names), in that order.
    /// Appended to one array: read for every task while planning, the
    /// arrays concatenated here were a fifth of finding a computed var's readers.
    package var templates: [Template] {
        var templates: [Template] = []
        switch action {
        case .run(let script): templates.append(script)
        case .sleep: break
        case .http(let request):
            templates.append(request.url)
            for header in request.headers { templates.append(header.value) }
            if let body = request.body { templates.append(body) }
        }
        for variable in env { templates.append(variable.value) }
        if let cwd { templates.append(cwd) }
        if let nameTemplate { templates.append(nameTemplate) }
        if let ready { templates += ready.templates }
        for semaphore in semaphores { if let name = semaphore.computedName { templates.append(name) } }
        return templates
    }

    /// Whether a semaphore name reads `${{ }}`, filled in when the task is ready.
    package var hasComputedSemaphores: Bool { semaphores.contains { $0.computedName != nil } }

    /// Every `item.KEY` operand the task reads (templates and `if:`).
    package var itemFieldOperands: [Operand] {
        (templates.flatMap(\.operands) + (condition?.value.operands ?? [])).filter {
            if case .itemField = $0.path { return true }
            return false
        }
    }
}

/// One task as written: its action, dependencies, limits and retry policy.
public struct TaskDefinition: Sendable {
    public var name: String
    /// Where the task's name (its key) is written.
    public var location: SourceLocation
    public var action: TaskAction
    public var needs: [Reference] = []
    public var when: RunCondition = .success
    /// `if:` — evaluated once the needs are settled; false gives `skipped`.
    public var condition: Located<Expression>?
    /// Per attempt.
    public var timeout: Located<Duration>?
    public var retries: Int = 0
    public var retryDelay: Duration = .seconds(1)
    public var backoff: Double = 2
    public var semaphores: [SemaphoreUse] = []
    public var continueOnError: Bool = false
    public var env: [EnvironmentEntry] = []
    public var cwd: Template?
    public var description: String?
    /// Only in a fan-out template: the member's name, e.g. `fetch-${{ item }}`.
    public var nameTemplate: Template?
    /// `sources:` — globs (templates) whose contents decide, with the task's
    /// identity and its `generates`, whether it is up to date.
    package var sources: [Template] = []
    /// `generates:` — globs of the files the task makes.
    package var generates: [Template] = []
    /// `shell:` — the program (and its arguments) that runs this task's
    /// script as a file; nil: the workflow's shell, `-c`.
    package var shell: [String]?
    /// Set when the task is a call of a template (`uses:`).
    package var templateCall: TemplateCall?

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

/// `semaphores: [db]` or `{network: 2}` — a slot weight in a named pool.
public struct SemaphoreUse: Sendable {
    public var name: String
    public var weight: Int
    public var location: SourceLocation

    package init(name: String, weight: Int, location: SourceLocation) {
        self.name = name
        self.weight = weight
        self.location = location
    }
}

extension TaskDefinition {
    /// Every template the task fills in at run time (`run`, `env`, `cwd`,
    /// `http`, a fan-out `name`), in that order.
    package var templates: [Template] {
        var templates: [Template] = []
        switch action {
        case .run(let script): templates.append(script)
        case .sleep: break
        case .http(let request): templates += [request.url] + request.headers.map(\.value) + [request.body].compactMap { $0 }
        }
        return templates + env.map(\.value) + [cwd, nameTemplate].compactMap { $0 }
    }

    /// Every `item.KEY` operand the task reads (templates and `if:`).
    package var itemFieldOperands: [Operand] {
        (templates.flatMap(\.operands) + (condition?.value.operands ?? [])).filter {
            if case .itemField = $0.path { return true }
            return false
        }
    }
}

import FlowrunYAML
import FlowrunModel

extension WorkflowDecoder {
    /// Where a task is declared, which decides the keys it may use.
    enum TaskContext {
        case main, finally, groupMember, fanOutTemplate
        /// A template under `templates:`, checked on its own.
        case template
    }

    static let actionKeys = ["run", "sleep", "http"]
    static let taskKeys = actionKeys + [
        "needs", "when", "if", "timeout", "retries", "retry_delay", "backoff", "semaphores",
        "continue_on_error", "env", "cwd", "description",
        "shell", "aliases", "prompt", "resources", "retry_resources", "executor",
    ] + incrementalKeys + serviceKeys

    mutating func task(_ name: Located<String>, _ node: YAMLNode, context: TaskContext) -> TaskDefinition? {
        let allowed = context == .fanOutTemplate ? Self.taskKeys + ["name"] : Self.taskKeys
        if parameterScope == nil, let call = Self.templateCallKeys(node) { return templateCall(name, node, keys: call, context: context) }
        let what = context == .fanOutTemplate ? "the fan-out task template" : context == .template ? "template '\(name.value)'" : "task '\(name.value)'"
        guard let fields = fields(of: node, what: what, allowed: allowed) else { return nil }

        let actions = Self.actionKeys.compactMap { fields[$0] }.sorted { $0.key.mark < $1.key.mark }
        guard let actionPair = actions.first else {
            // `cmds:` and the like were reported with a pointer to `run:` already.
            if node.mapping?.contains(where: { PeerWords.pointers[$0.key.scalar?.text ?? ""] == ["run"] }) == true { return nil }
            error("\(what) needs exactly one of 'run', 'sleep' or 'http'", at: name.location)
            return nil
        }
        for extra in actions.dropFirst() {
            error("\(what) already has '\(actionPair.key.scalar?.text ?? "")'; a task has exactly one of 'run', 'sleep' or 'http'", at: extra.key)
        }
        guard let action = action(actionPair, what: what) else { return nil }

        var task = TaskDefinition(name: name.value, location: name.location, action: action)
        if let node = fields["needs"]?.value { task.needs = references(node, what: "needs") }
        if let node = fields["when"]?.value, let when = runCondition(node) { task.when = when }
        if let node = fields["if"]?.value { task.condition = condition(node) }
        if let node = fields["timeout"]?.value { task.timeout = positiveDuration(node, what: "timeout") }
        if let node = fields["retries"]?.value, let value = int(node, what: "retries", in: NumericBounds.retries) { task.retries = value }
        if let node = fields["retry_delay"]?.value, let value = duration(node, what: "retry_delay") { task.retryDelay = value.value }
        if let node = fields["backoff"]?.value, let value = number(node, what: "backoff", in: NumericBounds.backoff) { task.backoff = value }
        if let node = fields["semaphores"]?.value { task.semaphores = semaphoreUses(node) }
        if let pair = fields["resources"] { task.resources = resources(pair) }
        if let node = fields["retry_resources"]?.value { task.retryResources = retryResources(node) }
        if let node = fields["continue_on_error"]?.value, let value = bool(node, what: "continue_on_error") { task.continueOnError = value }
        if let node = fields["env"]?.value { task.env = environment(node, context: .task) }
        if let node = fields["cwd"]?.value, let text = string(node, what: "cwd") { task.cwd = template(text, node: node) }
        if let node = fields["description"]?.value { task.description = string(node, what: "description") }
        if let node = fields["sources"]?.value { task.sources = globs(node, what: "sources") }
        if let node = fields["generates"]?.value { task.generates = globs(node, what: "generates") }
        if let node = fields["shell"]?.value { task.shell = shellCommand(node, script: task.action) }
        service(fields, into: &task, what: what)
        if let node = fields["executor"]?.value {
            task.executor = executor(node)
            checkExecutor(of: task, what: what)
        }
        if let pair = fields["aliases"] {
            if context == .fanOutTemplate || context == .finally {
                let place = context == .finally ? "a finally task, which is not a target" : "a fan-out's task template; put them on the group"
                error("aliases cannot be given to \(place)", at: pair.key)
            } else {
                task.aliases = aliases(pair.value)
            }
        }
        if let pair = fields["prompt"] {
            if context == .fanOutTemplate || context == .finally {
                error("prompt: is for a task a run is asked to run; put it on a top-level task or a group member", at: pair.key)
            } else if let text = string(pair.value, what: "prompt") {
                task.prompt = Located(text, at: location(pair.value))
            }
        }
        if case .run(let script) = task.action {
            if ScriptLaunch.of(shell: task.shell, script: script.source).readsAsShell { checkShellContexts(script) } else { warnOfQuotedValues(script) }
        }
        if let node = fields["name"]?.value, let text = string(node, what: "name") {
            task.nameTemplate = template(text, node: node)
            if task.nameTemplate?.isLiteral == true {
                error("a fan-out member name must use ${{ item }} or ${{ index }} so that each member's name is unique", at: node)
            }
        }
        return task
    }

    private mutating func action(_ pair: YAMLNode.Pair, what: String) -> TaskAction? {
        let node = pair.value
        switch pair.key.scalar?.text {
        case "run":
            guard let script = string(node, what: "run") else { return nil }
            if script.allSatisfy(\.isWhitespace) { error("run needs a script, found nothing", at: node) }
            return .run(template(script, node: node, insideShell: true))
        case "sleep":
            guard let scalar = node.scalar, !scalar.isNull else {
                error("expected a duration or a range like 1s..3s for sleep, found \(describe(node))", at: node)
                return nil
            }
            do throws(DurationSyntax.Problem) {
                return .sleep(try DurationSyntax.parseSleep(scalar.text))
            } catch {
                self.error("\(error.message) in sleep", at: node)
                return nil
            }
        default:
            return http(node)
        }
    }

    static let httpKeys = ["url", "method", "headers", "body", "expect"]

    private mutating func http(_ node: YAMLNode) -> TaskAction? {
        guard let fields = fields(of: node, what: "http", allowed: Self.httpKeys) else { return nil }
        guard let urlNode = fields["url"]?.value else {
            error("http needs a 'url'", at: node)
            return nil
        }
        guard let url = string(urlNode, what: "url") else { return nil }
        var request = HTTPRequest(url: template(url, node: urlNode))
        if !url.contains("${{"), !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            error("url must start with http:// or https://, found '\(url)'", at: urlNode)
        }
        if let node = fields["method"]?.value, let method = string(node, what: "method") {
            let known = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
            if known.contains(method.uppercased()) {
                request.method = method.uppercased()
            } else {
                error("unknown HTTP method '\(method)'\(Suggestion.hint(for: method.uppercased(), in: known))", at: node)
            }
        }
        if let node = fields["headers"]?.value, let pairs = mapping(node, what: "headers") {
            for pair in pairs {
                guard let name = pair.key.scalar?.text, let value = string(pair.value, what: "header '\(pair.key.scalar?.text ?? "")'") else { continue }
                request.headers.append((name, template(value, node: pair.value)))
            }
        }
        if let node = fields["body"]?.value, let body = string(node, what: "body") { request.body = template(body, node: node) }
        if let node = fields["expect"]?.value, let status = int(node, what: "expect", in: 100...Int.max) {
            if status > 599 { error("expect must be an HTTP status between 100 and 599, found \(status)", at: node) }
            request.expect = status
        }
        return .http(request)
    }

    /// `when: success | failure | always` (a task's or a group's).
    mutating func runCondition(_ node: YAMLNode) -> RunCondition? {
        guard !holdsExpression(node, what: "when"), let text = string(node, what: "when") else { return nil }
        guard let when = RunCondition(rawValue: text) else {
            error("when must be success, failure or always, found '\(text)'\(Suggestion.hint(for: text, in: RunCondition.allCases.map(\.rawValue)))", at: node)
            return nil
        }
        return when
    }

    /// `if: ${{ expr }}` or a bare expression (`if: tasks.a.status == 'failed'`).
    mutating func condition(_ node: YAMLNode) -> Located<Expression>? {
        guard let scalar = node.scalar else {
            error("expected an expression for if, found \(node.kindDescription)", at: node)
            return nil
        }
        if let value = scalar.bool { return Located(.boolean(value), at: location(node)) }
        if let message = PeerWords.statusCheckMessage(scalar.text) {
            error(message, at: node)
            return nil
        }
        let text = scalar.text.trimmingWhitespace
        if text.hasPrefix("${{") {
            let parsed = template(scalar.text, node: node)
            guard parsed.segments.count == 1, case .expression(let expression, let location)? = parsed.segments.first else {
                if !parsed.segments.isEmpty {
                    error("if takes one expression: write it as ${{ … }} with nothing around it", at: node)
                }
                return nil
            }
            return Located(expression, at: location)
        }
        let start = location(node)
        let shift = scalar.style == .singleQuoted || scalar.style == .doubleQuoted ? 1 : 0
        var parser = ExpressionParser(names: names) { offset in
            SourceLocation(file: start.file, line: start.line, column: start.column + shift + offset)
        }
        parser.parameters = parameterScope.map { scope in { scope.lookup($0) } }
        do throws(ExpressionError) {
            return Located(try parser.parse(scalar.text), at: start)
        } catch {
            self.error("in if: \(error.message)", at: SourceLocation(file: start.file, line: start.line, column: start.column + shift + error.offset))
            return nil
        }
    }

    /// `semaphores: [db]`, `{db: 2}`; a name may read `${{ }}` (`batch-${{ item.batch }}`)
    /// to pick a pool of a family when the task is ready to run (SPEC §15).
    private mutating func semaphoreUses(_ node: YAMLNode) -> [SemaphoreUse] {
        switch node.content {
        case .mapping(let pairs):
            return pairs.compactMap { pair in
                guard let name = pair.key.scalar?.text, let weight = int(pair.value, what: "the weight of semaphore '\(pair.key.scalar?.text ?? "")'", in: NumericBounds.slots) else { return nil }
                return semaphoreUse(name, weight: weight, node: pair.key)
            }
        default:
            return oneOrList(node, expected: "a name or a list of names for semaphores").compactMap { item in
                guard let name = item.scalar?.text, !(item.scalar?.isNull ?? true) else {
                    error("expected a name in semaphores, found \(item.kindDescription)", at: item)
                    return nil
                }
                return semaphoreUse(name, weight: 1, node: item)
            }
        }
    }

    private mutating func semaphoreUse(_ name: String, weight: Int, node: YAMLNode) -> SemaphoreUse {
        guard name.utf8.contains(UInt8(ascii: "$")), name.contains("${{") else { return SemaphoreUse(name: name, weight: weight, location: location(node)) }
        let computed = template(name, node: node)
        // A template call's parameters filled in as text leave a plain name.
        if computed.isLiteral {
            let text = computed.segments.map { if case .text(let text) = $0 { text } else { "" } }.joined()
            return SemaphoreUse(name: text, weight: weight, location: location(node))
        }
        return SemaphoreUse(name: computed.source, weight: weight, location: location(node), computedName: computed)
    }

    enum EnvironmentContext { case workflow, task }

    mutating func environment(_ node: YAMLNode, context: EnvironmentContext) -> [EnvironmentEntry] {
        guard let pairs = mapping(node, what: "env") else { return [] }
        return pairs.compactMap { pair in
            guard let name = pair.key.scalar?.text else { return nil }
            if !Self.isValidEnvironmentName(name) {
                error("'\(name)' is not a valid environment variable name (letters, digits and '_', not starting with a digit)", at: pair.key)
            }
            if name.hasPrefix("FLOWRUN_") {
                error("'\(name)': names starting with FLOWRUN_ are set by flowrun for each task", at: pair.key)
            }
            guard let scalar = pair.value.scalar else {
                error("the value of env.\(name) must be a string or a number, found \(pair.value.kindDescription)", at: pair.value)
                return nil
            }
            return EnvironmentEntry(name: name, value: template(scalar.isNull ? "" : scalar.text, node: pair.value), location: location(pair.key))
        }
    }

    static func isValidEnvironmentName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
    }
}

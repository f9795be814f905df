import FlowrunYAML
import FlowrunModel

/// `service: true` and its `ready:` probe (SPEC §14).
extension WorkflowDecoder {
    static let serviceKeys = ["service", "ready"]
    static let probeChecks = ["tcp", "http", "line", "run"]
    static let probeKeys = probeChecks + ["status", "timeout", "interval"]

    /// Reads `service:` and `ready:` into `task`; `ready:` without `service: true` is an error at `ready`.
    mutating func service(_ fields: Fields, into task: inout TaskDefinition, what: String) {
        if let node = fields["service"]?.value, let value = bool(node, what: "service") {
            task.isService = value
            if value, case .run = task.action {} else if value {
                error("service: true needs a 'run:' (a process that keeps running); \(what) has no run", at: node)
            }
        }
        guard let pair = fields["ready"] else { return }
        guard task.isService else {
            error("ready: is a service's probe; add 'service: true' to \(what), or remove 'ready:'", at: pair.key)
            return
        }
        task.ready = probe(pair.value)
    }

    private mutating func probe(_ node: YAMLNode) -> ReadyProbe? {
        guard let fields = fields(of: node, what: "ready", allowed: Self.probeKeys) else { return nil }
        let checks = Self.probeChecks.compactMap { fields[$0] }.sorted { $0.key.mark < $1.key.mark }
        guard let first = checks.first else {
            error("ready needs exactly one of 'tcp', 'http', 'line' or 'run'", at: node)
            return nil
        }
        for extra in checks.dropFirst() {
            error("ready already has '\(first.key.scalar?.text ?? "")'; a probe has exactly one of 'tcp', 'http', 'line' or 'run'", at: extra.key)
        }
        let key = first.key.scalar?.text ?? ""
        guard let text = string(first.value, what: "ready.\(key)") else { return nil }
        if key != "http", let status = fields["status"] {
            error("status: is for an http probe; ready.\(key) has none", at: status.key)
        }
        let check: ReadyProbe.Check
        switch key {
        case "tcp":
            if !text.contains("${{"), ReadyProbe.hostAndPort(text) == nil {
                error("ready.tcp must be HOST:PORT (like 127.0.0.1:5432 or localhost:8000), found '\(text)'", at: first.value)
            }
            check = .tcp(template(text, node: first.value))
        case "http":
            if !text.contains("${{"), !(text.hasPrefix("http://") || text.hasPrefix("https://")) {
                error("ready.http must start with http:// or https://, found '\(text)'", at: first.value)
            }
            var status = 200
            if let node = fields["status"]?.value, let value = int(node, what: "ready.status", in: 100...599) { status = value }
            check = .http(url: template(text, node: first.value), status: status)
        case "line":
            do {
                _ = try Regex(text)
            } catch {
                self.error("ready.line is not a valid regular expression: \(error)", at: first.value)
                return nil
            }
            check = .line(text)
        default:
            if text.allSatisfy(\.isWhitespace) { error("ready.run needs a command, found nothing", at: first.value) }
            check = .run(template(text, node: first.value, insideShell: true))
        }
        var probe = ReadyProbe(check: check, location: location(node))
        if let node = fields["timeout"]?.value, let value = positiveDuration(node, what: "ready.timeout") { probe.timeout = value.value }
        if let node = fields["interval"]?.value, let value = positiveDuration(node, what: "ready.interval") { probe.interval = value.value }
        return probe
    }
}

import FlowrunModel
import FlowrunPlanning

/// `service: true` on Argo: a daemoned step (`daemon: true`), whose
/// dependents start once the container's readiness probe passes — Argo's
/// own form of SPEC §14. A `line` probe has no Kubernetes equivalent and
/// is refused at its line.
extension ArgoCompiler {
    /// The container's `readinessProbe` for a service's `ready:`; nil without one (ready when started).
    mutating func readinessProbe(of task: TaskDefinition) -> ManifestValue? {
        guard let probe = task.ready else { return nil }
        // A probe reading vars is filled in with their values now: a Kubernetes probe takes no parameters.
        var filled: [String] = []
        for template in probe.templates {
            if template.isLiteral {
                filled.append(template.source)
            } else if let value = PlanTimeValues(vars: workflow.vars).filledIn(template) {
                filled.append(value)
                problems.emulate("ready: '\(template.source)' is exported as '\(value)', the vars' values now: a -p at submit does not change the probe", at: probe.location)
            } else {
                problems.refuse("a ready: probe that reads a task's value cannot be exported: Kubernetes probes take no values", at: probe.location)
                return nil
            }
        }
        var result = ManifestMap()
        switch probe.check {
        case .tcp:
            guard let (host, port) = ReadyProbe.hostAndPort(filled[0]) else { return nil }
            if !Self.isLoopback(host) {
                problems.emulate("ready.tcp checks port \(port) of the service's own pod, not \(host)", at: probe.location)
            }
            result.set("tcpSocket", .map([("port", .string(String(port)))]))  // IntOrString: written quoted, as the other such fields
        case .http(_, let status):
            guard let parts = Self.urlParts(filled[0]) else {
                problems.refuse("ready.http '\(filled[0])' has no host and port Kubernetes can probe", at: probe.location)
                return nil
            }
            if !Self.isLoopback(parts.host) {
                problems.emulate("ready.http probes the service's own pod on port \(parts.port), not \(parts.host)", at: probe.location)
            }
            if status != 200 {
                problems.emulate("Kubernetes counts any status from 200 to 399 as ready, not only \(status)", at: probe.location)
            }
            var get = ManifestMap()
            get.set("path", parts.path)
            get.set("port", .string(String(parts.port)))
            if parts.https { get.set("scheme", "HTTPS") }
            result.set("httpGet", get.value)
        case .line:
            problems.refuse("a ready: {line: …} probe cannot run on Argo: a container's readiness is a tcp, http or command probe; use one of them", at: probe.location)
            return nil
        case .run:
            result.set("exec", .map([("command", .list([.string("/bin/sh"), .string("-c"), .string(filled[0])]))]))
        }
        let period = max(1, Int((probe.interval.seconds).rounded(.up)))
        result.set("periodSeconds", .int(period))
        // Argo waits for a daemon's readiness without a deadline of its own: the probe's timeout is not kept.
        problems.note("the ready: timeout (\(probe.timeout.text)) is not enforced on Argo, which waits for a daemon's readiness probe without one", at: probe.location)
        return result.value
    }

    private static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.") || host == "0.0.0.0"
    }

    /// `http://host:port/path` → its parts (port 80/443 when not given).
    static func urlParts(_ url: String) -> (https: Bool, host: String, port: Int, path: String)? {
        let https = url.hasPrefix("https://")
        guard https || url.hasPrefix("http://") else { return nil }
        let rest = url.dropFirst(https ? 8 : 7)
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        var host = String(authority)
        var port = https ? 443 : 80
        if let (parsedHost, parsedPort) = ReadyProbe.hostAndPort(host) { (host, port) = (parsedHost, parsedPort) }
        guard !host.isEmpty else { return nil }
        return (https, host, port, path.isEmpty ? "/" : String(path))
    }
}

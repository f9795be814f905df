/// `ready:` — how flowrun learns that a `service: true` task is up: the
/// check it repeats every `interval` until it first passes, or `timeout`
/// has gone by (SPEC §14).
public struct ReadyProbe: Sendable {
    public enum Check: Sendable {
        /// `tcp: "host:port"` — a connection is accepted.
        case tcp(Template)
        /// `http: URL` — a GET answers `status` (200 unless given).
        case http(url: Template, status: Int)
        /// `line: REGEX` — the service printed a matching line (stdout or stderr).
        case line(String)
        /// `run: CMD` — the command exits 0.
        case run(Template)
    }

    public static let defaultTimeout: Duration = .seconds(30)
    public static let defaultInterval: Duration = .milliseconds(200)

    public var check: Check
    public var timeout: Duration = ReadyProbe.defaultTimeout
    public var interval: Duration = ReadyProbe.defaultInterval
    /// Where `ready:` is written.
    public var location: SourceLocation

    package init(check: Check, location: SourceLocation) {
        self.check = check
        self.location = location
    }

    /// `tcp 127.0.0.1:5433`, `http http://…/health → 200`, `line /listening/`, `run pg_isready`:
    /// what the live view and the dry run say the service waits for.
    package var summary: String {
        switch check {
        case .tcp(let address): "tcp \(address.source)"
        case .http(let url, let status): "http \(url.source) → \(status)"
        case .line(let pattern): "line /\(pattern)/"
        case .run(let command): "run \(command.source)"
        }
    }

    /// Every template the probe fills in at run time.
    package var templates: [Template] {
        switch check {
        case .tcp(let address): [address]
        case .http(let url, _): [url]
        case .line: []
        case .run(let command): [command]
        }
    }

    /// `host:port` or `[v6]:port` with a port in 1...65535; nil if it is not one.
    package static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        return (host, port)
    }
}

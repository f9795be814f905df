/// How long an `http:` task may take (SPEC §11): a server that accepts the
/// connection and then trickles bytes must not hold a run forever.
extension HTTPRequest {
    /// The whole request, unless the task sets `timeout:` (which replaces it).
    public static let defaultTimeout = Duration.seconds(300)
    /// Until the connection is made (TCP and TLS), whatever `timeout:` says.
    public static let connectTimeout = Duration.seconds(30)
}

extension TaskDefinition {
    /// The limit of one attempt: `timeout:`, else 5 minutes for `finally`
    /// tasks (their own budget) and for `http:` tasks; nil means none.
    public var attemptTimeout: Duration? {
        if let timeout { return timeout.value }
        if case .http = action { return HTTPRequest.defaultTimeout }
        return nil
    }

    /// Said after "timed out after 5m" when the limit was not the task's own.
    package var timeoutNote: String {
        guard timeout == nil, case .http = action else { return "" }
        return " (the whole-request limit of http tasks; set timeout: to change it)"
    }
}

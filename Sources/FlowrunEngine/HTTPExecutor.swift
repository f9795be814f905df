import Dispatch
import FlowrunRecord
import FlowrunValues

/// `http:`: each attempt one request on libcurl's thread (`HTTPAttempt`).
struct HTTPExecutor: Executor {
    /// A request as the engine rendered it.
    struct Request {
        var method: String
        var url: String
        var headers: [(String, String)]
        var body: String?
        var expect: Int
        /// The body goes here as it arrives (and the request line and status).
        var log: TaskLog
        var secretMasker: SecretMasker?
    }

    let queue: DispatchQueue
    let descriptorsFit: () -> Bool
    let waitForDescriptors: (@escaping () -> Void) -> Bool

    var printsOutput: Bool { false }

    func attempt(_ request: Request, output: AttemptOutput?, end: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        if let attempt = HTTPAttempt(
            method: request.method, url: request.url, headers: request.headers, body: request.body, expect: request.expect,
            log: request.log, secretMasker: request.secretMasker, queue: queue,
            descriptorsFit: descriptorsFit, waitForDescriptors: waitForDescriptors, completion: end) {
            return attempt
        }
        return FailedAttempt(reason: "not an http(s) URL: '\(URLRedaction.redact(request.url))'", queue: queue, completion: end)
    }
}

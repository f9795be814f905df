import CFlowrunHTTP
import Dispatch

/// `ready: {http: URL, status: 200}`: a GET on the HTTP client's one thread
/// (the `http:` tasks' libcurl loop), its end handed back to the engine's queue.
final class HTTPReadinessCheck: ReadinessCheck, @unchecked Sendable {
    // @unchecked: `inFlight` is touched only on `queue`; the C callbacks only hop to it.
    private let url: String
    private let status: Int
    private let queue: DispatchQueue
    private let connectTimeoutMilliseconds: Int
    private var inFlight: UInt64 = 0
    private var report: ((String?) -> Void)?

    /// The URL's host and port: an answer from another user's socket there does not count.
    private let endpoint: (host: String, port: Int)?

    init(url: String, status: Int, connectTimeout: Duration, queue: DispatchQueue, endpoint: (host: String, port: Int)? = nil) {
        self.url = url
        self.endpoint = endpoint
        self.status = status
        self.queue = queue
        connectTimeoutMilliseconds = max(100, connectTimeout.nanoseconds / 1_000_000)
    }

    func poke(_ report: @escaping (String?) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard inFlight == 0 else { return }
        self.report = report
        let context = Unmanaged.passRetained(self).toOpaque()
        var problem: UnsafePointer<CChar>?
        let headers: [UnsafePointer<CChar>?] = []
        let id = headers.withUnsafeBufferPointer { pointers in
            flowrun_http_start(
                "GET", url, pointers.baseAddress, 0, nil, 0, connectTimeoutMilliseconds, context,
                { _, _, _, _ in },
                { context, status, error, _ in
                    let check = Unmanaged<HTTPReadinessCheck>.fromOpaque(context!).takeRetainedValue()
                    let message = error.map { String(cString: $0) }
                    check.queue.async { check.ended(status: Int(status), error: message) }
                },
                &problem)
        }
        guard id != 0 else {
            Unmanaged<HTTPReadinessCheck>.fromOpaque(context).release()
            report(problem.map { String(cString: $0) } ?? "cannot start the request")
            return
        }
        inFlight = id
    }

    private func ended(status: Int, error: String?) {
        dispatchPrecondition(condition: .onQueue(queue))
        inFlight = 0
        guard let report else { return }
        self.report = nil
        if status == self.status {
            if let endpoint, let foreign = LocalListeners.foreignAnswer(host: endpoint.host, port: endpoint.port) { return report(foreign) }
            return report(nil)
        }
        report(status == 0 ? "request failed: \(error ?? "no response") (\(url))" : "HTTP \(status) (expected \(self.status)) from \(url)")
    }

    func cancel() {
        report = nil
        if inFlight != 0 { flowrun_http_cancel(inFlight) }
    }
}

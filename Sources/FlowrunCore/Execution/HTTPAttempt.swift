import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `http: {url, method, headers, body, expect}`: one request; another status fails the task.
/// The response body is the stash's stdout (the last 1 MiB) and goes to the task's log.
final class HTTPAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: `done` and `task` are only touched on `queue`.
    private let queue: DispatchQueue
    private let request: URLRequest
    private let expect: Int
    private let logPath: String
    private let completion: (AttemptResult) -> Void
    private var task: URLSessionDataTask?
    private var done = false

    private static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }()

    init?(method: String, url: String, headers: [(String, String)], body: String?, expect: Int, logPath: String,
          queue: DispatchQueue, completion: @escaping (AttemptResult) -> Void) {
        guard let parsed = URL(string: url), parsed.scheme == "http" || parsed.scheme == "https" else { return nil }
        var request = URLRequest(url: parsed)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body { request.httpBody = Data(body.utf8) }
        self.request = request
        self.expect = expect
        self.logPath = logPath
        self.queue = queue
        self.completion = completion
    }

    func start() {
        let task = Self.session.dataTask(with: request) { [weak self] data, response, error in
            guard let self else { return }
            let status = (response as? HTTPURLResponse)?.statusCode
            let body = data ?? Data()
            self.queue.async { self.finished(status: status, body: body, error: error) }
        }
        self.task = task
        task.resume()
    }

    private func finished(status: Int?, body: Data, error: (any Error)?) {
        let log = "\(request.httpMethod ?? "GET") \(request.url?.absoluteString ?? "")\n"
            + (status.map { "HTTP \($0)\n" } ?? "") + (error.map { "error: \($0.localizedDescription)\n" } ?? "")
        appendToLog(Data(log.utf8) + body)
        var result: AttemptResult
        if let status {
            result = AttemptResult(status: status == expect ? .succeeded : .failed, exitCode: status,
                                   reason: status == expect ? nil : "HTTP \(status) (expected \(expect))")
        } else {
            result = AttemptResult(status: .failed, reason: "request failed: \(error?.localizedDescription ?? "no response")")
        }
        var stdout = String(decoding: body.suffix(1 << 20), as: UTF8.self)
        if stdout.hasSuffix("\n") { stdout.removeLast() }
        result.stdout = stdout
        complete(result)
    }

    private func appendToLog(_ data: Data) {
        let descriptor = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        data.withUnsafeBytes { _ = write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }

    func stop(as status: TaskStatus, reason: String) {
        task?.cancel()
        complete(AttemptResult(status: status, reason: reason))
    }

    func kill() {
        stop(as: .cancelled, reason: "killed")
    }

    private func complete(_ result: AttemptResult) {
        guard !done else { return }
        done = true
        completion(result)
    }
}

import CFlowrunHTTP
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues
import FlowrunEvents
import FlowrunRecord

/// `http: {url, method, headers, body, expect}`: one request; another status fails the task.
///
/// The request runs on libcurl's thread (`flowrun_http_start`, see
/// flowrun_http.c for why not URLSession). The log gets the request line,
/// the status and the body as it arrives; the stash's stdout is the body's
/// last 1 MiB, so a large download costs no memory beyond that. The log
/// shows the URL without credentials or query values (`URLRedaction`) and
/// the body with secrets masked; the stash keeps the body as it came.
///
/// Limits: libcurl gets the connect limit (`HTTPRequest.connectTimeout`);
/// the whole request's (`timeout:`, 5 minutes by default) is the engine's
/// timer, which cancels the request.
final class HTTPAttempt: TaskAttempt, @unchecked Sendable {
    // @unchecked: `done`, `requestID`, `announced` and the descriptor
    // waits are only touched on `queue` (`dispatchPrecondition` at `start`,
    // `cancel`, `finished`, `complete`); the log descriptor, `tail`, `bodyByteCount`,
    // `statusWritten` and `bodyMasking` only on the HTTP thread between
    // `start` and the end callback, which hands `tail` over to `queue`.
    private let queue: DispatchQueue
    private let method: String
    private let url: String
    private let headers: [(String, String)]
    private let body: String?
    private let expect: Int
    private let log: TaskLog
    private let completion: (AttemptResult) -> Void
    private var requestID: UInt64 = 0
    private var done = false
    private var tail: [UInt8] = []
    private var statusWritten = false
    private let secretMasker: SecretMasker?
    /// The body's secrets, masked as it streams to the log (HTTP thread).
    private let bodyMasking: SecretMaskingStream?

    /// Whether one more task's descriptors fit under flowrun's limit now.
    private let descriptorsFit: () -> Bool
    /// Descriptors ran short: hands the engine a retry to run when a task
    /// ends; false when no task runs that would free any.
    private let waitForDescriptors: (@escaping () -> Void) -> Bool
    /// Waiting for descriptors (queue): not started, not failed.
    private(set) var waitingForDescriptors = false
    /// Tries while nothing ran that could free a descriptor (queue).
    private var idleDescriptorRetries = 0
    /// The request line is in the log: a try after a wait does not repeat it.
    private var announced = false

    /// Sent and not ended: its socket holds a descriptor (queue).
    var holdsDescriptors: Bool { requestID != 0 && !waitingForDescriptors && !done }

    private static let stashLimit = 1 << 20
    /// The whole body's length: past 1 MiB the stash is only its end (`ValueLimit`).
    private var bodyByteCount = 0

    init?(method: String, url: String, headers: [(String, String)], body: String?, expect: Int, log: TaskLog,
          secretMasker: SecretMasker? = nil, queue: DispatchQueue,
          descriptorsFit: @escaping () -> Bool = { true }, waitForDescriptors: @escaping (@escaping () -> Void) -> Bool = { _ in false },
          completion: @escaping (AttemptResult) -> Void) {
        let scheme = url.prefix(while: { $0 != ":" }).lowercased()
        guard (scheme == "http" || scheme == "https") && url.dropFirst(scheme.count).hasPrefix("://") else { return nil }
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.expect = expect
        self.log = log
        self.queue = queue
        self.completion = completion
        self.descriptorsFit = descriptorsFit
        self.waitForDescriptors = waitForDescriptors
        self.secretMasker = secretMasker
        bodyMasking = secretMasker?.stream()
    }

    func start() {
        dispatchPrecondition(condition: .onQueue(queue))
        // Under a tight limit, wait before the socket (and the log it may need).
        if !descriptorsFit(), waitsForDescriptors() { return }
        if !announced { writeLog("\(method) \(URLRedaction.redact(url))\n") }
        announced = true
        // A line break in a header would start another header (or the body),
        // and a NUL would cut the URL or method short: values from upstream
        // outputs may hold either, so such a request is refused, not sent.
        if let problem = Self.unsafeText(method: method, url: url, headers: headers) {
            fail(problem)
            return
        }
        let lines = headers.map { "\($0.0): \($0.1)" }
        let headerArray: CStringArray
        do {
            headerArray = try CStringArray(lines, what: "header")
        } catch {
            fail(error.description)
            return
        }
        let headerPointers = UnsafeRawPointer(headerArray.pointers).assumingMemoryBound(to: UnsafePointer<CChar>?.self)
        // One reference for libcurl's thread, given back by the end callback.
        let context = Unmanaged.passRetained(self).toOpaque()
        var problem: UnsafePointer<CChar>?
        var body = body
        let id = Self.withBytes(of: &body) { bytes, count in
            flowrun_http_start(
                method, url, headerPointers, lines.count, bytes, Int64(count),
                Int(HTTPRequest.connectTimeout.components.seconds * 1000), context,
                { context, status, bytes, count in
                    Unmanaged<HTTPAttempt>.fromOpaque(context!).takeUnretainedValue()
                        .received(status: status, UnsafeRawBufferPointer(start: bytes, count: count))
                },
                { context, status, error, outOfDescriptors in
                    Unmanaged<HTTPAttempt>.fromOpaque(context!).takeRetainedValue()
                        .ended(status: status, error: error.map { String(cString: $0) }, outOfDescriptors: outOfDescriptors != 0)
                },
                &problem)
        }
        guard id != 0 else {
            Unmanaged<HTTPAttempt>.fromOpaque(context).release()
            fail(problem.map { String(cString: $0) } ?? "cannot start the request")
            return
        }
        requestID = id
    }

    /// Why the request cannot be sent as written, if it cannot.
    private static func unsafeText(method: String, url: String, headers: [(String, String)]) -> String? {
        func breaks(_ text: String) -> Bool { text.utf8.contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 } }
        if breaks(method) { return "the method contains a line break or NUL byte; not sent" }
        if breaks(url) || url.utf8.contains(0x20) { return "the URL contains a space, line break or NUL byte; not sent" }
        if let (name, _) = headers.first(where: { breaks($0.0) || breaks($0.1) }) {
            return "header '\(name.filter { !$0.isNewline && $0 != "\0" })' contains a line break or NUL byte; not sent"
        }
        return nil
    }

    /// The body's bytes and length (nil for no body); libcurl takes it by length.
    private static func withBytes<R>(of text: inout String?, _ body: (UnsafePointer<CChar>?, Int) -> R) -> R {
        guard var text else { return body(nil, 0) }
        guard !text.isEmpty else { return "".withCString { body($0, 0) } }
        return text.withUTF8 { utf8 in
            utf8.withMemoryRebound(to: CChar.self) { body($0.baseAddress, $0.count) }
        }
    }

    /// On the HTTP thread: a chunk of the body.
    private func received(status: Int, _ chunk: UnsafeRawBufferPointer) {
        writeStatus(status)
        if let bodyMasking {
            bodyMasking.write(chunk) { log.write($0) }
        } else {
            log.write(chunk)
        }
        tail.append(contentsOf: chunk)
        bodyByteCount += chunk.count
        if tail.count > 2 * Self.stashLimit { tail.removeFirst(tail.count - Self.stashLimit) }
    }

    /// On the HTTP thread: the request is over.
    private func ended(status: Int, error: String?, outOfDescriptors: Bool) {
        if outOfDescriptors {
            // Nothing was sent: not a failure of the request; the log stays open for the next try.
            queue.async { self.shortOfDescriptors() }
            return
        }
        writeStatus(status)
        bodyMasking?.finish { log.write($0) }
        if let error { writeLog("error: \(error)\n") }
        log.close()
        let body = tail.suffix(Self.stashLimit)
        queue.async { self.finished(status: status == 0 ? nil : status, body: body, error: error) }
    }

    private func writeStatus(_ status: Int) {
        guard !statusWritten, status > 0 else { return }
        statusWritten = true
        writeLog("HTTP \(status)\n")
    }

    /// Text flowrun writes to the log: secrets masked.
    private func writeLog(_ text: String) {
        log.write(secretMasker?.mask(text) ?? text)
    }

    private func finished(status: Int?, body: ArraySlice<UInt8>, error: String?) {
        dispatchPrecondition(condition: .onQueue(queue))
        var result: AttemptResult
        if let status {
            result = AttemptResult(status: status == expect ? .succeeded : .failed, exitCode: status,
                                   reason: status == expect ? nil : "HTTP \(status) (expected \(expect))")
        } else {
            result = AttemptResult(status: .failed, reason: "request failed: \(error ?? "no response")")
        }
        var stdout = String(decoding: body, as: UTF8.self)
        let valueByteCount = bodyByteCount - (stdout.hasSuffix("\n") ? 1 : 0)
        if stdout.hasSuffix("\n") { stdout.removeLast() }
        result.stdout = stdout
        if valueByteCount > ValueLimit.bytes {
            // Not kept whole anywhere but the log: any use of it fails, naming its size.
            result.oversizedStdout = OversizedStdout(byteCount: valueByteCount, file: nil)
        }
        if let problem = log.problem {
            // A response that could not be kept is output lost: say so, and fail.
            result.status = .failed
            result.reason = problem
        }
        complete(result)
    }

    private func fail(_ reason: String) {
        writeLog("flowrun: \(reason)\n")
        log.close()
        let result = AttemptResult(status: .failed, reason: reason)
        queue.async { self.complete(result) }
    }

    /// On `queue`: the socket (or a descriptor libcurl needed) could not be
    /// had. The task waits for a task to end and tries again; with none
    /// running, a few quick tries, then the run stops naming the limit.
    private func shortOfDescriptors() {
        guard !done else { return }
        if waitsForDescriptors() { return }
        log.close()
        var result = AttemptResult(status: .failed, reason: "no file descriptor left (ulimit -n \(DescriptorLimit.current))")
        result.outOfDescriptors = true
        complete(result)
    }

    /// As `ProcessAttempt`'s: true when a retry is arranged.
    private func waitsForDescriptors() -> Bool {
        waitingForDescriptors = true
        if waitForDescriptors({ [weak self] in self?.startAfterWaiting() }) { return true }
        guard idleDescriptorRetries < 10 else {
            waitingForDescriptors = false
            return false
        }
        idleDescriptorRetries += 1
        queue.asyncAfter(deadline: .now() + .milliseconds(20)) { [weak self] in self?.startAfterWaiting() }
        return true
    }

    private func startAfterWaiting() {
        guard waitingForDescriptors, !done else { return }
        waitingForDescriptors = false
        start()
    }

    /// Nothing to signal: any teardown cancels the request at once.
    func cancel(as status: TaskStatus, reason: String, through steps: [TeardownStep]) {
        dispatchPrecondition(condition: .onQueue(queue))
        if waitingForDescriptors {
            // Never sent: no end callback will close the log.
            waitingForDescriptors = false
            log.close()
        }
        if requestID != 0 { flowrun_http_cancel(requestID) }
        complete(AttemptResult(status: status, reason: reason))
    }

    private func complete(_ result: AttemptResult) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !done else { return }
        done = true
        var result = result
        // The log is created when the request starts (it names the request).
        result.wroteLog = log.exists
        completion(result)
    }
}

import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - A tiny HTTP server

/// Answers one HTTP request on 127.0.0.1 with a given status, on a thread of
/// its own, and keeps what it received. Gives up after `timeout`.
final class OneRequestHTTPServer: Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let received = Mutex<String?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(status: Int, body: String = "ok\n", timeout: Duration = .seconds(20)) throws {
        let listener = try TCPListener()
        // Keep the socket: TCPListener closes its own in deinit, so take a duplicate.
        descriptor = fcntl(listener.descriptor, F_DUPFD_CLOEXEC, 0)
        port = listener.port
        guard descriptor >= 0 else { throw FlowrunBinaryError("dup: \(String(cString: strerror(errno)))") }
        let thread = Thread { [self] in
            serve(status: status, body: body, timeout: timeout)
            finished.signal()
        }
        thread.start()
    }

    deinit { close(descriptor) }

    var url: String { "http://127.0.0.1:\(port)" }

    /// The request as received (head and body), once served; nil if none came within `timeout`.
    func request(waiting timeout: Duration = .seconds(20)) -> String? {
        _ = finished.wait(timeout: .now() + .nanoseconds(Int(timeout.seconds * 1e9)))
        return received.withLock { $0 }
    }

    private func serve(status: Int, body: String, timeout: Duration) {
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, Int32(timeout.seconds * 1000)) > 0 else { return }
        let connection = accept(descriptor, nil, nil)
        guard connection >= 0 else { return }
        defer { close(connection) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Read the head, then as much body as Content-Length says.
        while true {
            var readable = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&readable, 1, 5000) > 0 else { break }
            let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
            let text = String(decoding: bytes, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n") {
                let head = text[..<headEnd.lowerBound].lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text[headEnd.upperBound...].utf8.count >= length { break }
            }
        }
        received.withLock { $0 = String(decoding: bytes, as: UTF8.self) }
        let response = "HTTP/1.1 \(status) Status \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        var reply = Array(response.utf8)
        var offset = 0
        while offset < reply.count {
            let written = reply.withUnsafeMutableBytes { write(connection, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
    }
}

/// Accepts one request on 127.0.0.1, sends a head promising a large body,
/// then trickles it a byte every `interval` (a server that never quite
/// answers). Notes when the client hangs up; stops after `limit`.
final class TricklingHTTPServer: Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let state = Mutex<(bytesSent: Int, hungUpAfter: Double?)>((0, nil))
    private let finished = DispatchSemaphore(value: 0)

    init(interval: Duration = .milliseconds(100), limit: Duration = .seconds(20)) throws {
        let listener = try TCPListener()
        descriptor = fcntl(listener.descriptor, F_DUPFD_CLOEXEC, 0)
        port = listener.port
        guard descriptor >= 0 else { throw FlowrunBinaryError("dup: \(String(cString: strerror(errno)))") }
        let thread = Thread { [self] in
            serve(interval: interval, limit: limit)
            finished.signal()
        }
        thread.start()
    }

    deinit { close(descriptor) }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Body bytes sent, and seconds from the head until the client hung up
    /// (nil if it never did within `limit`), once the server has stopped.
    func outcome(waiting timeout: Duration = .seconds(25)) -> (bytesSent: Int, hungUpAfter: Double?) {
        _ = finished.wait(timeout: .now() + .nanoseconds(Int(timeout.seconds * 1e9)))
        return state.withLock { $0 }
    }

    private func serve(interval: Duration, limit: Duration) {
        var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&waiting, 1, Int32(limit.seconds * 1000)) > 0 else { return }
        let connection = accept(descriptor, nil, nil)
        guard connection >= 0 else { return }
        defer { close(connection) }
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
            let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            head += buffer[0..<count]
        }
        func send(_ text: String) -> Bool {
            var bytes = Array(text.utf8)
            return bytes.withUnsafeMutableBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
        }
        guard send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n") else { return }
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            // A hang-up shows as readable with nothing to read.
            var probe = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            if poll(&probe, 1, Int32(interval.seconds * 1000)) > 0 {
                let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count <= 0 {
                    state.withLock { $0.hungUpAfter = (ContinuousClock.now - start).seconds }
                    return
                }
            }
            guard send("x") else {
                state.withLock { $0.hungUpAfter = (ContinuousClock.now - start).seconds }
                return
            }
            state.withLock { $0.bytesSent += 1 }
        }
    }
}

import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Answers every HTTP request on 127.0.0.1 with 200 and `ok`, one
/// connection at a time on a thread of its own, until it is deinitialised
/// (`fd.yaml` of issue 32.10 ran against `python3 -m http.server`). Counts
/// the requests it answered.
final class ManyRequestHTTPServer: Sendable {
    let port: UInt16
    private let descriptor: Int32
    private let stopping = Atomic<Bool>(false)
    private let answered = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        let listener = try TCPListener()
        descriptor = fcntl(listener.descriptor, F_DUPFD_CLOEXEC, 0)
        port = listener.port
        guard descriptor >= 0 else { throw FlowrunBinaryError("dup: \(String(cString: strerror(errno)))") }
        let thread = Thread { [self] in
            serve()
            finished.signal()
        }
        thread.start()
    }

    deinit {
        stopping.store(true, ordering: .relaxed)
        _ = finished.wait(timeout: .now() + 2)
        close(descriptor)
    }

    var url: String { "http://127.0.0.1:\(port)/" }
    var requests: Int { answered.load(ordering: .relaxed) }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopping.load(ordering: .relaxed) {
            // Polled in short turns, so that deinit's flag is seen.
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 100) > 0 else { continue }
            let connection = accept(descriptor, nil, nil)
            guard connection >= 0 else { continue }
            var head: [UInt8] = []
            while !String(decoding: head, as: UTF8.self).contains("\r\n\r\n") {
                var readable = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                guard poll(&readable, 1, 5000) > 0 else { break }
                let count = buffer.withUnsafeMutableBytes { read(connection, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                head += buffer[0..<count]
            }
            var reply = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n".utf8)
            if reply.withUnsafeMutableBytes({ send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == reply.count {
                answered.add(1, ordering: .relaxed)
            }
            close(connection)
        }
    }
}

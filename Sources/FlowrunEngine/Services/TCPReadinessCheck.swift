#if canImport(Glibc)
import Glibc
#endif

/// `ready: {tcp: "host:port"}`: a non-blocking connect, whose outcome a
/// later poke reads with a zero-timeout `poll` if it did not complete at
/// once. Never blocks the engine's queue (the name is looked up once;
/// names in /etc/hosts and numeric addresses answer at once).
final class TCPReadinessCheck: ReadinessCheck {
    private let host: String
    private let port: Int
    /// A connect in progress, if one is.
    private var connecting: Int32 = -1

    /// A probe's (not the watch's port check): a connection accepted by
    /// another user's socket does not count (`LocalListeners`).
    private let checksOwner: Bool

    init(host: String, port: Int, checksOwner: Bool = false) {
        self.host = host
        self.port = port
        self.checksOwner = checksOwner
    }

    func poke(_ report: @escaping (String?) -> Void) {
        let problem = tryOnce()
        if problem == nil, checksOwner, let foreign = LocalListeners.foreignAnswer(host: host, port: port) { return report(foreign) }
        report(problem)
    }

    /// nil: connected. Else why not (still connecting counts as not yet).
    private func tryOnce() -> String? {
        if connecting >= 0 {
            var entry = pollfd(fd: connecting, events: Int16(POLLOUT), revents: 0)
            guard poll(&entry, 1, 0) > 0 else { return "connecting to \(host):\(port)" }
            let problem = Self.socketError(connecting)
            close(connecting)
            connecting = -1
            return problem.map { "\($0) (\(host):\(port))" }
        }
        var lastProblem = "cannot resolve \(host)"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let list else { return "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))" }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = list
        // Every address the name has (localhost: ::1 and 127.0.0.1; a server may listen on only one).
        while let address = entry {
            entry = address.pointee.ai_next
            let socket = Glibc.socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else {
                lastProblem = String(cString: strerror(errno))
                continue
            }
            if connect(socket, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                close(socket)
                return nil
            }
            let error = errno
            if error == EINPROGRESS {
                connecting = socket
                return "connecting to \(host):\(port)"
            }
            close(socket)
            lastProblem = "\(String(cString: strerror(error)).lowercased()) (\(host):\(port))"
        }
        return lastProblem
    }

    private static func socketError(_ socket: Int32) -> String? {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return String(cString: strerror(errno)).lowercased() }
        return error == 0 ? nil : String(cString: strerror(error)).lowercased()
    }

    func cancel() {
        if connecting >= 0 { close(connecting) }
        connecting = -1
    }

    /// Whether nothing accepts connections at `host:port` now: before a
    /// service is started again (watch), its old listener must be gone.
    static func isFree(host: String, port: Int) -> Bool {
        let check = TCPReadinessCheck(host: host, port: port)
        defer { check.cancel() }
        // A connect in progress is neither free nor taken yet: count it as taken.
        return check.tryOnce() != nil && check.connecting < 0
    }
}

#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel

/// Who listens on a TCP port of this machine (SPEC §14), from
/// /proc/net/tcp and /proc/net/tcp6. A `tcp` or `http` probe passes when a
/// connection is accepted, and another process's server accepts one as
/// well as the service's: another user's server on the port (which then
/// gets what the dependents send), or a server left from an earlier run.
/// So a service whose probe's port is already listened on before it starts
/// fails at once, and — flowrun running as an ordinary user — a probe
/// answered by a socket of another user (not root) does not pass.
enum LocalListeners {
    struct Listener: Equatable {
        /// 4 or 16 bytes, network order.
        var address: [UInt8]
        var uid: UInt32
    }

    /// The host and port a probe connects to: `tcp`'s `HOST:PORT`, or an
    /// `http` URL's authority (80 or 443 without a port). Nil if it has none.
    static func endpoint(ofURL url: String) -> (host: String, port: Int)? {
        guard let schemeEnd = url.firstRange(of: "://") else { return nil }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if let (host, port) = ReadyProbe.hostAndPort(String(authority)) { return (host, port) }
        var host = String(authority)
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(":") || authority.hasPrefix("[") else { return nil }
        switch scheme {
        case "http": return (host, 80)
        case "https": return (host, 443)
        default: return nil
        }
    }

    /// The listening sockets a connection to `host:port` could reach; nil
    /// when `host` is not an address of this machine (nothing to look at:
    /// a name other than `localhost` is not resolved here).
    static func answering(host: String, port: Int) -> [Listener]? {
        guard let targets = localAddresses(of: host) else { return nil }
        return listening(port: port).filter { listener in targets.contains { reaches(listener.address, $0) } }
    }

    /// Why a probe that passed does not count, or nil: flowrun runs as an
    /// ordinary user and every socket listening on the port belongs to
    /// another user (root's, e.g. a container runtime's proxy, counts as
    /// the service's). Under root nothing is refused here (a service may
    /// drop to another user): the check before the start holds.
    static func foreignAnswer(host: String, port: Int) -> String? {
        let me = geteuid()
        guard me != 0, let listeners = answering(host: host, port: port), !listeners.isEmpty,
              !listeners.contains(where: { $0.uid == me || $0.uid == 0 }) else { return nil }
        return "\(host):\(port) answers, but from a socket of \(userText(listeners[0].uid)), not of the service"
    }

    /// Why a service must not start, or nil: its probe's port is listened on already.
    static func inUseBeforeStart(host: String, port: Int) -> String? {
        guard let listeners = answering(host: host, port: port), let first = listeners.first else { return nil }
        return "\(host):\(port) is in use before the service started (a socket of \(userText(first.uid)) listens on it): its ready probe could not tell that server from the service's; stop it or use another port"
    }

    static func userText(_ uid: UInt32) -> String {
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name { return "uid \(uid) (\(String(cString: name)))" }
        return "uid \(uid)"
    }

    /// The addresses `host` stands for, if each is this machine's: loopback,
    /// the unspecified address, or an address of one of its interfaces.
    static func localAddresses(of host: String) -> [[UInt8]]? {
        if host.lowercased() == "localhost" { return [[127, 0, 0, 1], [UInt8](repeating: 0, count: 15) + [1]] }
        guard let address = numeric(host) else { return nil }
        if address.count == 4, address[0] == 127 || address == [0, 0, 0, 0] { return [address] }
        if address.count == 16, address == [UInt8](repeating: 0, count: 15) + [1] || address == [UInt8](repeating: 0, count: 16) { return [address] }
        return interfaceAddresses().contains(address) ? [address] : nil
    }

    private static func numeric(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func interfaceAddresses() -> [[UInt8]] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var result: [[UInt8]] = []
        var entry = list
        while let current = entry {
            entry = current.pointee.ifa_next
            guard let address = current.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                    var value = inet.pointee.sin_addr
                    result.append(withUnsafeBytes(of: &value) { Array($0) })
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet in
                    var value = inet.pointee.sin6_addr
                    result.append(withUnsafeBytes(of: &value) { Array($0) })
                }
            default:
                break
            }
        }
        return result
    }

    /// Whether a connection to `target` reaches a socket listening on `listener` (same port).
    static func reaches(_ listener: [UInt8], _ target: [UInt8]) -> Bool {
        let anyV4: [UInt8] = [0, 0, 0, 0], anyV6 = [UInt8](repeating: 0, count: 16)
        if target == anyV4 || target == anyV6 { return true }  // a connection to 0.0.0.0 or :: goes to this machine
        if listener == target || listener == anyV6 { return true }
        if target.count == 4 {
            if listener == anyV4 { return true }
            let mapped = [UInt8](repeating: 0, count: 10) + [0xff, 0xff] + target
            return listener == mapped
        }
        return false
    }

    /// Every socket listening on `port` (state 0A), IPv4 and IPv6.
    static func listening(port: Int) -> [Listener] {
        var result: [Listener] = []
        forEachSocket(port: port, state: "0A") { fields, address in
            if let uid = UInt32(fields[7]) { result.append(Listener(address: address, uid: uid)) }
        }
        return result
    }

    /// How many closed connections of `port`'s own side wait out TIME_WAIT
    /// (state 06; ≤ 60 s on Linux, not tunable): a server that binds
    /// without SO_REUSEADDR fails with "Address already in use" until they
    /// are gone. On any address: a bind to 0.0.0.0 conflicts with each.
    static func closedConnections(port: Int) -> Int {
        var count = 0
        forEachSocket(port: port, state: "06") { _, _ in count += 1 }
        return count
    }

    /// The /proc/net/tcp and tcp6 lines of sockets whose local port is `port`, in `state` (hex, as printed).
    private static func forEachSocket(port: Int, state: Substring, _ body: ([Substring], [UInt8]) -> Void) {
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = readWhole(file) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 7, fields[3] == state else { continue }
                let local = fields[1].split(separator: ":")
                guard local.count == 2, Int(local[1], radix: 16) == port, let address = kernelAddress(local[0]) else { continue }
                body(fields, address)
            }
        }
    }

    /// /proc/net/tcp prints an address as 32-bit words in host order (`%08X` each).
    private static func kernelAddress(_ hex: Substring) -> [UInt8]? {
        guard hex.count == 8 || hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var start = hex.startIndex
        while start < hex.endIndex {
            let end = hex.index(start, offsetBy: 8)
            guard var word = UInt32(hex[start..<end], radix: 16) else { return nil }
            bytes += withUnsafeBytes(of: &word) { Array($0) }
            start = end
        }
        return bytes
    }

    /// A /proc file of any size (a busy machine's socket table passes 64 KiB).
    private static func readWhole(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count < 64 << 20 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

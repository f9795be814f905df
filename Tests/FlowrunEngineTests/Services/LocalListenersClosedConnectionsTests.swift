@testable import FlowrunEngine
import Glibc
import Testing

/// `LocalListeners.closedConnections`: the TIME_WAIT sockets on a port's
/// own side, read from /proc/net/tcp — what keeps a server without
/// SO_REUSEADDR from binding (RunEngine+ClosedConnections.swift).
@Suite struct LocalListenersClosedConnectionsTests {
    /// A socket listening on 127.0.0.1 at an ephemeral port, and its address.
    private func listeningSocket() throws -> (socket: Int32, address: sockaddr_in) {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(server >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(server, $0, length) == 0 && getsockname(server, $0, &length) == 0 }
        }
        guard bound && listen(server, 1) == 0 else {
            close(server)
            try #require(Bool(false), "no listening socket on 127.0.0.1")
            throw CancellationError()
        }
        return (server, address)
    }

    /// A loopback server on an ephemeral port, a client, the server closing
    /// first: its side of the connection is in TIME_WAIT. Returns the port.
    private func serverClosesFirst() throws -> Int {
        let (server, listening) = try listeningSocket()
        var address = listening
        defer { close(server) }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(client >= 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(connected)
        let accepted = accept(server, nil, nil)
        try #require(accepted >= 0)
        close(accepted)  // the server's side closes first: it goes to TIME_WAIT once the client closes
        var byte: UInt8 = 0
        _ = read(client, &byte, 1)  // EOF: the server's FIN arrived
        close(client)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func aPortWhoseServerClosedFirstHasOneClosedConnection() throws {
        let port = try serverClosesFirst()
        // The last ACK is sent as the client closes; the kernel's table has it at once, but give it a moment under load.
        var held = 0
        for _ in 0..<200 where held == 0 {
            held = LocalListeners.closedConnections(port: port)
            if held == 0 { usleep(10_000) }
        }
        #expect(held == 1)
        #expect(LocalListeners.listening(port: port).isEmpty)
    }

    @Test func aListeningPortWithNoConnectionHasNone() throws {
        let (server, address) = try listeningSocket()
        defer { close(server) }
        let port = Int(UInt16(bigEndian: address.sin_port))
        #expect(LocalListeners.listening(port: port).count == 1)
        #expect(LocalListeners.closedConnections(port: port) == 0)
    }
}

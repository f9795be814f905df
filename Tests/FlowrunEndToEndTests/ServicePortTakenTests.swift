import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// A `tcp` or `http` probe passes when a connection is accepted, and
    /// another process's server accepts one as well as the service's: a
    /// server another user (or an earlier run) left on the port. The
    /// service then failed to bind, but its probe passed at once and its
    /// dependents talked to that server (sending it what they send the
    /// service). A service whose probe's port is listened on before it
    /// starts now fails at once, naming the listener (SPEC §14).
    @Suite struct ServicePortTakenTests {
        /// A socket listening on 127.0.0.1:`port` in this process (what another user's server would be).
        static func listen(on port: Int) throws -> Int32 {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { throw FlowrunBinaryError("socket: \(errno)") }
            var yes: Int32 = 1
            setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard bound, Glibc.listen(socket, 16) == 0 else { close(socket); throw FlowrunBinaryError("bind/listen: \(errno)") }
            return socket
        }

        @Test func aServiceWhoseTCPPortIsTakenBeforeItStartsFailsAndItsDependentsNeverRun() throws {
            let sandbox = try Self.expectATakenPortFailsTheService(
                "db", ready: { port in "{ tcp: \"127.0.0.1:\(port)\", timeout: 5s }" }, address: { "127.0.0.1:\($0)" })
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aServiceWhoseHTTPPortIsTakenBeforeItStartsFailsAndItsDependentsNeverRun() throws {
            _ = try Self.expectATakenPortFailsTheService(
                "web", ready: { port in "{ http: \"http://localhost:\(port)/health\", timeout: 3s }" }, address: { "localhost:\($0)" })
        }

        /// Runs service `name` probed by `ready(port)` on a port another socket
        /// already listens on: the service fails naming `address(port)`, and
        /// its dependent is skipped without running.
        static func expectATakenPortFailsTheService(
            _ name: String, ready: (Int) -> String, address: (Int) -> String
        ) throws -> RunSandbox {
            let sandbox = try RunSandbox()
            let port = try freePort()
            let other = try listen(on: port)
            defer { close(other) }
            let run = try sandbox.run("""
                tasks:
                  \(name):
                    service: true
                    run: sleep 30
                    ready: \(ready(port))
                  test:
                    needs: [\(name)]
                    run: touch "$SANDBOX/test-ran"
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == [name: "failed", "test": "skipped"], "\(run)")
            let reason = record.finished(name)?["reason"] as? String ?? ""
            #expect(reason.contains("\(address(port)) is in use before the service started"), "\(reason)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.path + "/test-ran"), "the dependent ran against another server")
            return sandbox
        }
    }
}

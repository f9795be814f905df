import Foundation
import Testing

extension RunEndToEndParallel {
    /// A task that finds no file descriptor left waits for another task's
    /// end to free some — never for a service's: a service runs until every
    /// other task has settled.
    @Suite struct ServiceDescriptorLimitTests {
        /// A service and a task that needs it, under descriptor limits around
        /// what the pair needs. Before, at the limit where the dependent's
        /// pipes did not fit beside the service's, the dependent waited for
        /// the service to end — which waited for it: the run hung, its
        /// dependent shown as started. Each run now ends on its own.
        @Test func aTaskShortOfDescriptorsDoesNotWaitForAServiceToEnd() throws {
            _ = try RunSandbox.tool("python3")
            let prlimit = try RunSandbox.tool("prlimit")
            var hung: [Int] = []
            // Above what this process leaves open to its children (the test runner's own, some 20).
            let inherited = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 20
            for limit in (inherited + 24)...(inherited + 40) {
                let sandbox = try RunSandbox()
                let port = try freePort()
                let outcome = try sandbox.run(wrapped: [prlimit, "--nofile=\(limit):\(limit)"], """
                    tasks:
                      web:
                        service: true
                        run: exec python3 -m http.server \(port) --bind 127.0.0.1
                        ready: { tcp: "127.0.0.1:\(port)", timeout: 20s }
                      smoke: { needs: [web], run: 'echo smoke; echo more >&2' }
                    """, timeout: .seconds(25))
                if outcome.timedOut { hung.append(limit) }
                #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
            }
            #expect(hung.isEmpty, "hung under ulimit -n \(hung)")
        }
    }
}

@testable import FlowrunCore
import Dispatch
import Foundation
import Synchronization
import Testing

/// Spawn cost: /bin/true 2000 times, 2 at a time, each next launch started
/// from the previous one's completion. Off unless FLOWRUN_SPAWN_BENCH=1;
/// meaningful in a release build:
///
///     FLOWRUN_SPAWN_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter ProcessLayerSpawnBenchmark
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["FLOWRUN_SPAWN_BENCH"] == "1"))
struct ProcessLayerSpawnBenchmarkTests {
    /// Keeps `concurrency` children running until `total` have finished.
    final class Chain: Sendable {
        let reaper: ChildReaper
        let request: LaunchRequest
        let total: Int
        let queue = DispatchQueue(label: "bench", attributes: .concurrent)
        /// (started, finished); owned by its mutex.
        let counts = Mutex((started: 0, finished: 0))
        let done = OneShot<ContinuousClock.Instant>()

        init(reaper: ChildReaper, request: LaunchRequest, total: Int) {
            self.reaper = reaper
            self.request = request
            self.total = total
        }

        func next() {
            guard counts.withLock({ counts in
                guard counts.started < total else { return false }
                counts.started += 1
                return true
            }) else { return }
            do {
                _ = try reaper.launch(request, on: queue) { [self] exit in
                    precondition(exit == .exited(0), "\(exit)")
                    if counts.withLock({ $0.finished += 1; return $0.finished }) == total {
                        done.fulfil(.now)
                    } else {
                        next()
                    }
                }
            } catch {
                preconditionFailure("\(error)")
            }
        }
    }

    /// Microseconds per task.
    static func measure(reaper: ChildReaper, shell: String, script: String, total: Int = 2000, concurrency: Int = 2) async -> Double {
        let chain = Chain(reaper: reaper, request: LaunchRequest(shell: shell, script: script, environment: [testPath]), total: total)
        let started = ContinuousClock.now
        for _ in 0..<concurrency { chain.next() }
        guard let end = await chain.done.value(within: .seconds(300)) else { return .infinity }
        let (seconds, attoseconds) = (end - started).components
        return (Double(seconds) + Double(attoseconds) / 1e18) * 1e6 / Double(total)
    }

    @Test func spawnCostWithEachReaperScope() async {
        // Warm up (page cache, libdispatch threads).
        _ = await Self.measure(reaper: testReaper, shell: "/bin/true", script: "", total: 200)
        let direct = await Self.measure(reaper: testReaper, shell: "/bin/true", script: "")
        let viaShell = await Self.measure(reaper: testReaper, shell: "/bin/sh", script: "true")
        print("spawn cost, .launchedChildren: /bin/true \(Int(direct)) µs per task; /bin/sh -c true \(Int(viaShell)) µs per task")

        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let reaper = try ChildReaper(scope: .allChildren)
            _ = await ProcessLayerSpawnBenchmarkTests.measure(reaper: reaper, shell: "/bin/true", script: "", total: 200)
            let direct = await ProcessLayerSpawnBenchmarkTests.measure(reaper: reaper, shell: "/bin/true", script: "")
            let viaShell = await ProcessLayerSpawnBenchmarkTests.measure(reaper: reaper, shell: "/bin/sh", script: "true")
            print("spawn cost, .allChildren: /bin/true \(Int(direct)) µs per task; /bin/sh -c true \(Int(viaShell)) µs per task")
        }
        if let result { print(String(decoding: result.standardOutputContent, as: UTF8.self), terminator: "") }
    }
}

@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
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
        /// Serial, like the engine's queue.
        let queue: DispatchQueue
        /// (started, finished); owned by its mutex.
        let counts = Mutex((started: 0, finished: 0))
        let done = OneShot<ContinuousClock.Instant>()

        init(reaper: ChildReaper, queue: DispatchQueue, request: LaunchRequest, total: Int) {
            self.reaper = reaper
            self.queue = queue
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

    /// Wall-clock microseconds per task, and this process's own CPU time
    /// (user + system) per task: flowrun's share, whatever the load.
    struct Cost: CustomStringConvertible {
        var wall: Double
        var cpu: Double
        var description: String { "\(Int(wall)) µs wall, \(Int(cpu)) µs own CPU" }
    }

    static func cpuMicroseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }

    /// Per task.
    static func measure(
        reaper: ChildReaper, queue: DispatchQueue = DispatchQueue(label: "bench"), shell: String, script: String,
        total: Int = 2000, concurrency: Int = 2
    ) async -> Cost {
        let chain = Chain(reaper: reaper, queue: queue, request: LaunchRequest(shell: shell, script: script, environment: [testPath]), total: total)
        let cpu = cpuMicroseconds()
        let started = ContinuousClock.now
        for _ in 0..<concurrency { chain.next() }
        guard let end = await chain.done.value(within: .seconds(300)) else { return Cost(wall: .infinity, cpu: .infinity) }
        let (seconds, attoseconds) = (end - started).components
        return Cost(
            wall: (Double(seconds) + Double(attoseconds) / 1e18) * 1e6 / Double(total),
            cpu: (cpuMicroseconds() - cpu) / Double(total))
    }

    @Test func spawnCostWithEachReaperScope() async {
        // Warm up (page cache, libdispatch threads).
        _ = await Self.measure(reaper: testReaper, shell: "/bin/true", script: "", total: 200)
        let direct = await Self.measure(reaper: testReaper, shell: "/bin/true", script: "")
        let viaShell = await Self.measure(reaper: testReaper, shell: "/bin/sh", script: "true")
        print("spawn cost per task, .launchedChildren: /bin/true \(direct); /bin/sh -c true \(viaShell)")

        // `.allChildren` owns every child of its process: each in an exit test's own process.
        let separate = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let engine = DispatchQueue(label: "engine")
            let reaper = try ChildReaper(scope: .allChildren)
            await ProcessLayerSpawnBenchmarkTests.report("own queue", reaper: reaper, engine: engine)
        }
        let targeted = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            // As the engine would: reap passes on the queue completions go to.
            let engine = DispatchQueue(label: "engine")
            let reaper = try ChildReaper(scope: .allChildren, target: engine)
            await ProcessLayerSpawnBenchmarkTests.report("target = completion queue", reaper: reaper, engine: engine)
        }
        for result in [separate, targeted] {
            if let result { print(String(decoding: result.standardOutputContent, as: UTF8.self), terminator: "") }
        }
    }

    static func report(_ label: String, reaper: ChildReaper, engine: DispatchQueue) async {
        _ = await measure(reaper: reaper, queue: engine, shell: "/bin/true", script: "", total: 200)
        let direct = await measure(reaper: reaper, queue: engine, shell: "/bin/true", script: "")
        let viaShell = await measure(reaper: reaper, queue: engine, shell: "/bin/sh", script: "true")
        print("spawn cost per task, .allChildren, \(label): /bin/true \(direct); /bin/sh -c true \(viaShell)")
    }
}

@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunEngine
import Dispatch
import Foundation
import Synchronization
import Testing

/// `ChildReaper`: every exit reaches its own completion, once, whatever the
/// timing (an exit reaped before its registration included); orphans that
/// re-parent to a subreaper are reaped and reported.
@Suite struct ProcessLayerReaperTests {
    static func scripted(_ index: Int) -> (script: String, exit: ProcessExit) {
        switch index % 4 {
        case 0: ("exit \(index % 256)", .exited(Int32(index % 256)))
        case 1: ("kill -KILL $$", .signalled(SIGKILL))
        case 2: ("kill -TERM $$", .signalled(SIGTERM))
        default: ("sleep 0.0\(index % 10); exit \(index % 7)", .exited(Int32(index % 7)))
        }
    }

    @Test func reapingEveryChildAdoptsAndReportsOrphans() async {
        // The reaper owns every child of its process, so it runs in a
        // process of its own: this exit test's.
        // An issue recorded in the exit test's process is reported here.
        await #expect(processExitsWith: .success) {
            do {
                try await ProcessLayerReaperTests.allChildrenScenario()
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// Runs inside the exit test's process; throws on the first thing that is wrong.
    static func allChildrenScenario() async throws {
        struct Failure: Error, CustomStringConvertible { var description: String }
        func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
            if !condition { throw Failure(description: message()) }
        }
        let orphanQueue = DispatchQueue(label: "orphans")
        let orphans = Mutex<[(Int32, ProcessExit)]>([])
        let orphanReported = OneShot<Void>()
        let reaper = try ChildReaper(orphanQueue: orphanQueue) { pid, exit in
            orphans.withLock { $0.append((pid, exit)) }
            orphanReported.fulfil(())
        }
        // As in a run: the event loop hears SIGCHLD and runs the reap passes.
        let loop = EventLoop(engineQueue: DispatchQueue(label: "engine"))
        let exitWatch = try ChildExitWatch(reaper: reaper, loop: loop, outputs: OutputPump(loop: loop))

        // The shell leaves a background sleep and exits: the sleep re-parents
        // to us (a subreaper) before the shell's exit is reported.
        let output = try TestPipe()
        let exit = OneShot<ProcessExit>()
        _ = try reaper.launch(
            LaunchRequest(shell: "/bin/sh", script: "sleep 1000 & echo $!; exit 7", environment: [testPath], standardOutput: output.writeDescriptor),
            on: .global()) { exit.fulfil($0) }
        output.closeWriteEnd()
        try check(await exit.value() == .exited(7), "the shell's exit")
        let orphan = try #require(Int32(await output.lines { $0.count >= 1 }.first ?? ""))
        try check(ProcessTable.entry(orphan)?.parent == getpid(), "orphan \(orphan) was not adopted")
        kill(orphan, SIGKILL)
        try check(await orphanReported.value() != nil, "no orphan reported")
        try check(orphans.withLock { $0.map(\.0) } == [orphan], "orphans: \(orphans.withLock { $0 })")
        try check(orphans.withLock { $0.first?.1 } == .signalled(SIGKILL), "orphan exit")

        // Children reaped by waitpid(-1) before their registration are claimed,
        // not taken for orphans.
        let exits = (0..<100).map { _ in OneShot<ProcessExit>() }
        DispatchQueue.concurrentPerform(iterations: 100) { index in
            _ = try? reaper.watch(on: .global(), completion: { exits[index].fulfil($0) }) { () throws(ProcessError) in
                let pid = try ProcessLauncher.spawn(LaunchRequest(shell: "/bin/sh", script: Self.scripted(index).script, environment: [testPath]))
                if index % 10 == 0 {  // reaped before registered
                    for _ in 0..<5000 where ProcessTable.entry(pid) != nil { usleep(1000) }
                }
                return pid
            }
        }
        for index in 0..<100 {
            let got = await exits[index].value()
            try check(got == Self.scripted(index).exit, "child \(index): \(String(describing: got))")
        }
        orphanQueue.sync {}
        try check(orphans.withLock { $0.count } == 1, "children taken for orphans: \(orphans.withLock { $0 })")
        _ = (reaper, exitWatch)
    }
}

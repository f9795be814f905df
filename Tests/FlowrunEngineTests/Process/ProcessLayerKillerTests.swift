@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
@testable import FlowrunEvents
@testable import FlowrunRecord
@testable import FlowrunEngine
import FlowrunTestSupport
import Dispatch
import Foundation
import Testing

/// `ProcessTreeKiller`: SIGTERM once, SIGKILL after the grace, and nothing of
/// the tree left alive afterwards, including processes that left the group.
@Suite(.serialized) struct ProcessLayerKillerTests {
    let killer = ProcessTreeKiller()

    /// Calls `terminate` and returns how long until its completion (nil: none within 20 s).
    func terminate(_ tree: ProcessTree, grace: Duration) async -> Duration? {
        let done = OneShot<ContinuousClock.Instant>()
        let started = ContinuousClock.now
        killer.terminate(tree, grace: grace, on: .global()) { done.fulfil(.now) }
        return await done.value().map { $0 - started }
    }

    @Test func aChildThatTrapsTermIsKilledAfterTheGrace() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-term-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child = try launch("""
            trap 'echo got-term >> "\(log)"' TERM
            echo ready
            while :; do sleep 1000 & wait $!; done
            """)
        defer { cleanUp(child) }
        #expect(await child.output.lines { $0.contains("ready") } == ["ready"])

        let grace = Duration.milliseconds(500)
        let elapsed = try #require(await terminate(child.tree, grace: grace))
        #expect(elapsed >= grace)
        #expect(elapsed < grace + .seconds(1))
        #expect(await child.exit.value() == .signalled(SIGKILL))
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "got-term\n", "exactly one SIGTERM")
        #expect(survivors(of: child.tree) == [])
        #expect(!ProcessTreeKiller.hasLiveMembers(processGroup: child.pid))
    }

    @Test func aChildThatHonoursTermDoesNotWaitForTheGrace() async throws {
        let child = try launch("echo ready; sleep 1000")
        defer { cleanUp(child) }
        #expect(await child.output.lines { $0.contains("ready") } == ["ready"])

        let elapsed = try #require(await terminate(child.tree, grace: .seconds(10)))
        #expect(elapsed < .seconds(2))
        #expect(await child.exit.value() == .signalled(SIGTERM))
    }

    @Test func aStoppedChildIsContinuedToHandleTerm() async throws {
        let child = try launch("""
            trap 'echo got-term; exit 3' TERM
            kill -STOP $$
            echo continued-without-term
            """)
        defer { cleanUp(child) }
        // Wait (bounded) for the stop itself, not for a guess of how long it takes.
        let deadline = ContinuousClock.now + .seconds(10)
        while ProcessTable.entry(child.pid)?.state != UInt8(ascii: "T"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(ProcessTable.entry(child.pid)?.state == UInt8(ascii: "T"))

        let elapsed = try #require(await terminate(child.tree, grace: .seconds(10)))
        #expect(elapsed < .seconds(2), "a stopped shell keeps SIGTERM pending until SIGCONT")
        #expect(await child.output.lines() == ["got-term"])
        #expect(await child.exit.value() == .exited(3))
    }

    /// A task that leaves processes outside its group: a `setsid` grandchild,
    /// a double-forked daemon that ignores SIGTERM, an orphan left in the
    /// group, and a group member whose environment was scrubbed of the marker.
    static let escapingScript = """
        setsid sh -c 'echo "escapee $$"; exec sleep 1000' &
        setsid -f sh -c 'trap "" TERM; echo "daemon $$"; exec sleep 1000'
        sh -c 'sh -c "echo orphan \\$\\$; exec sleep 1000" &'
        env -i sh -c 'echo "scrubbed $$"; exec sleep 1000' &
        echo ready
        wait
        """

    /// Reads the escaping script's report: role → pid.
    static func escapees(of child: TestChild) async -> [String: Int32] {
        let lines = await child.output.lines { $0.count >= 5 }
        var pids: [String: Int32] = [:]
        for line in lines {
            let words = line.split(separator: " ")
            if words.count == 2, let pid = Int32(words[1]) { pids[String(words[0])] = pid }
        }
        return pids
    }

    @Test func descendantsThatLeftTheGroupAreFoundByTheMarkerAndKilled() async throws {
        let child = try launch(Self.escapingScript)
        defer { cleanUp(child) }
        let pids = await Self.escapees(of: child)
        #expect(Set(pids.keys) == ["escapee", "daemon", "orphan", "scrubbed"])
        // What a group kill alone would miss:
        for role in ["escapee", "daemon"] {
            let entry = try #require(ProcessTable.entry(pids[role] ?? 0), "\(role)")
            #expect(entry.processGroup != child.pid && entry.session != ProcessTable.entry(child.pid)?.session, "\(role)")
        }
        #expect(ProcessTable.entry(pids["orphan"] ?? 0)?.parent != child.pid)

        let grace = Duration.milliseconds(300)
        let elapsed = try #require(await terminate(child.tree, grace: grace))
        #expect(elapsed >= grace, "the daemon ignores SIGTERM: only SIGKILL after the grace ends it")
        #expect(elapsed < grace + .seconds(1))
        for (role, pid) in pids {
            #expect(hasExited(pid), "\(role) \(pid) survived")
        }
        #expect(survivors(of: child.tree) == [])
        #expect(await child.exit.value() == .signalled(SIGTERM))
    }

    @Test func killAllTakesEveryTreeOfTheRunAndNothingElse() async throws {
        let run = uniqueMarker().runID
        let first = try launch(Self.escapingScript, marker: ProcessTreeMarker(runID: run, serial: 1))
        let second = try launch(Self.escapingScript, marker: ProcessTreeMarker(runID: run, serial: 2))
        let bystander = try launch("echo ready; exec sleep 1000", marker: ProcessTreeMarker(runID: run + "0", serial: 1))
        // A run whose id starts with this run's id and a dot: its "RUN.x.1" is not "RUN.N".
        let dotted = try launch("echo ready; exec sleep 1000", marker: ProcessTreeMarker(runID: run + ".x", serial: 1))
        defer { cleanUp(first); cleanUp(second); cleanUp(bystander); cleanUp(dotted) }
        let pids = Array(await Self.escapees(of: first).values) + Array(await Self.escapees(of: second).values)
        #expect(pids.count == 8)
        #expect(await bystander.output.lines { $0.contains("ready") } == ["ready"])
        #expect(await dotted.output.lines { $0.contains("ready") } == ["ready"])

        let left = ProcessTreeKiller.killAll(runID: run, processGroups: [first.pid, second.pid])
        #expect(left == [])
        for pid in pids + [first.pid, second.pid] {
            #expect(hasExited(pid), "\(pid) survived")
        }
        #expect(await first.exit.value() == .signalled(SIGKILL))
        #expect(await second.exit.value() == .signalled(SIGKILL))
        #expect(!hasExited(bystander.pid), "another run's task was killed")
        #expect(!hasExited(dotted.pid), "a run whose id extends this one's was killed")
    }

    @Test func aGroupOutlivingItsLeaderStillHasLiveMembers() async throws {
        let child = try launch("sleep 1000 & echo ready")
        defer { cleanUp(child) }
        #expect(await child.exit.value() == .exited(0))
        #expect(ProcessTreeKiller.hasLiveMembers(processGroup: child.pid))

        #expect(await terminate(child.tree, grace: .seconds(5)) != nil)
        #expect(!ProcessTreeKiller.hasLiveMembers(processGroup: child.pid))

        let plain = try launch("exit 0")
        #expect(await plain.exit.value() == .exited(0))
        #expect(!ProcessTreeKiller.hasLiveMembers(processGroup: plain.pid))
    }

    @Test func aSecondRequestJoinsTheFirstAndKillEndsTheGrace() async throws {
        let child = try launch("""
            trap 'echo got-term' TERM
            echo ready
            while :; do sleep 1000 & wait $!; done
            """)
        defer { cleanUp(child) }
        #expect(await child.output.lines { $0.contains("ready") } == ["ready"])

        let first = OneShot<Void>()
        let second = OneShot<Void>()
        let killed = OneShot<ContinuousClock.Instant>()
        let started = ContinuousClock.now
        killer.terminate(child.tree, grace: .seconds(30), on: .global()) { first.fulfil(()) }
        killer.terminate(child.tree, grace: .seconds(30), on: .global()) { second.fulfil(()) }
        // dash may also report the killed `sleep` job ("Terminated").
        let trapped = await child.output.lines { $0.contains("got-term") }
        #expect(trapped.filter { $0 == "got-term" } == ["got-term"])
        killer.kill(child.tree, on: .global()) { killed.fulfil(.now) }

        let end = try #require(await killed.value())
        #expect(end - started < .seconds(5), "kill ended the 30 s grace")
        #expect(await first.value() != nil)
        #expect(await second.value() != nil)
        #expect(await child.output.lines().filter { $0 == "got-term" } == [], "exactly one SIGTERM: no second got-term")
        #expect(await child.exit.value() == .signalled(SIGKILL))
    }

    /// Teardown steps are data: each signal in order, the next after its grace, SIGKILL last.
    @Test func teardownStepsAreSentInOrderEachAfterItsGrace() async throws {
        let child = try launch("""
            trap 'echo got-usr1' USR1
            trap 'echo got-term' TERM
            echo ready
            while :; do sleep 1000 & wait $!; done
            """)
        defer { cleanUp(child) }
        #expect(await child.output.lines { $0.contains("ready") } == ["ready"])

        let done = OneShot<ContinuousClock.Instant>()
        let started = ContinuousClock.now
        let steps: [TeardownStep] = [.signal(SIGUSR1, grace: .milliseconds(400)), .signal(SIGTERM, grace: .milliseconds(400)), .kill]
        killer.stop(child.tree, through: steps, on: .global()) { done.fulfil(.now) }
        let end = try #require(await done.value())
        #expect(end - started >= .milliseconds(800), "each signal had its grace")
        #expect(end - started < .seconds(5))
        // dash may also report the killed `sleep` job ("Terminated").
        #expect(await child.output.lines().filter { $0.hasPrefix("got-") } == ["got-usr1", "got-term"])
        #expect(await child.exit.value() == .signalled(SIGKILL))
        #expect(survivors(of: child.tree) == [])
    }
}

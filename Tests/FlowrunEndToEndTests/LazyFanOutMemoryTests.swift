import Foundation
import Testing

extension RunEndToEndParallel {
    /// Issue 20's "Done when": a fan-out of 200,000 members read from a
    /// task's stdout runs every item exactly once in bounded memory — its
    /// members are made as slots free up and let go once settled. Not
    /// timed: the figure asserted is flowrun's own peak RSS (`VmHWM`).
    @Suite struct LazyFanOutMemoryTests {
        static let members = 200_000

        @Test func twoHundredThousandMembersFromAStdoutRunOnceEachUnder64MB() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 8
                tasks:
                  list:
                    run: seq 1 \(Self.members)
                  peak:
                    needs: [work]
                    # The task's parent is the engine's process: its peak RSS so far.
                    run: |
                      cat /proc/$PPID/comm > "$SANDBOX/parent"
                      grep '^VmHWM:' /proc/$PPID/status > "$SANDBOX/hwm"
                groups:
                  work:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      sleep: 0s
                """, timeout: .seconds(900))
            #expect(run.exitStatus == 0, "\(run)")

            // The reading is flowrun's: its parent is flowrun, not a shell or the supervisor's fork.
            #expect(sandbox.read("parent")?.hasPrefix("flowrun") == true, "parent: \(sandbox.read("parent") ?? "none")")
            let hwm = try #require(sandbox.read("hwm"), "no VmHWM reading")
            let kilobytes = try #require(Int(hwm.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? ""), "VmHWM line: \(hwm)")
            #expect(kilobytes < 64 * 1024, "flowrun's peak RSS was \(kilobytes) kB")

            // Every member started and finished exactly once, read from the record's events
            // (docs/events-json.md: a short attempt is one task_finished line carrying
            // `started`; a success has no `status`).
            let record = try sandbox.record()
            var started = [UInt8](repeating: 0, count: Self.members)
            var finished = [UInt8](repeating: 0, count: Self.members)
            let events = try #require(FileManager.default.contents(atPath: record.directory + "/events.jsonl"))
            for line in events.split(separator: UInt8(ascii: "\n")) {
                let text = String(decoding: line, as: UTF8.self)
                let isFinish = text.contains("\"task_finished\"")
                let isStart = text.contains("\"task_started\"") || (isFinish && text.contains("\"started\":"))
                guard isStart || isFinish, let index = Self.memberIndex(in: text) else { continue }
                try #require(index >= 0 && index < Self.members, "member index \(index) out of range")
                if isStart { started[index] += 1 }
                if isFinish && !text.contains("\"status\":") { finished[index] += 1 }
            }
            let notOnce = started.indices.filter { started[$0] != 1 || finished[$0] != 1 }
            #expect(notOnce.count == 0, "\(notOnce.count) members did not start and succeed exactly once, e.g. \(notOnce.prefix(5).map { "work[\($0)]: started \(started[$0]), succeeded \(finished[$0])" })")

            let summary = record.summary
            let counts = summary["counts"] as? [String: Any]
            #expect(counts?["succeeded"] as? Int == Self.members + 2, "counts: \(counts ?? [:])")
        }

        /// `N` of `"task":"work[N]"` in an event line.
        static func memberIndex(in line: String) -> Int? {
            guard let start = line.range(of: "\"task\":\"work[") else { return nil }
            let digits = line[start.upperBound...].prefix { $0.isNumber }
            return Int(digits)
        }
    }
}

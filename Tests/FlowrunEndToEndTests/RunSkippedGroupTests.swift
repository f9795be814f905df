import Foundation
import Testing

extension RunEndToEndParallel {
    /// A group skipped because a need failed settles its members too, so
    /// whatever waits on a member — a join, a task — hears of it.
    @Suite struct RunSkippedGroupTests {
        @Test func aJoinOnAMemberOfASkippedGroupEndsTheRun() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  fetch: { run: exit 1 }
                groups:
                  checks:
                    needs: [fetch]
                    tasks:
                      unit: { run: echo unit }
                joins:
                  done:
                    wait: [unit]
                """, output: "json", timeout: .seconds(20))
            #expect(!run.timedOut, "\(run)")
            #expect(run.exitStatus == 1, "\(run)")
            let finished = run.stdout.split(separator: "\n").filter { $0.contains("\"task_finished\"") && $0.contains("\"unit\"") }
            #expect(finished.count == 1, "\(run.stdout)")
            #expect(finished.first?.contains("\"skipped\"") == true, "\(finished)")
        }
    }
}

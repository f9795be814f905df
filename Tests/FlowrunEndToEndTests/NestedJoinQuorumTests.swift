import Foundation
import Testing

extension RunEndToEndParallel {
    /// A join that waits on another join (SPEC §5): when the outer join's
    /// quorum is met without the inner one, the inner join is not needed.
    @Suite struct NestedJoinQuorumTests {
        /// `outer` needs one of `inner` and `x`; `x` succeeds while `inner`'s
        /// `a` still runs. Before, `inner` was left pending, counted the
        /// cancellation of `a` as a failure, ended `failed` and the run
        /// exited 1 with nothing failed in its summary; the inner join is
        /// now `cancelled` itself (not needed), and the run exits 0.
        @Test func anInnerJoinAnOuterQuorumDidNotNeedIsCancelledNotFailed() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  a: { run: 'sleep 20' }
                  b: { run: echo b }
                  x: { run: 'sleep 0.3; echo x' }
                  after: { needs: [outer], run: echo after }
                joins:
                  outer: { wait: [inner, x], need: 1 }
                  inner: { wait: [a, b], need: all }
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.exitCode == 0, "\(record.summary)")
            let inner = record.events("join_completed").first { $0["join"] as? String == "inner" }
            #expect(inner?["status"] as? String == "cancelled", "\(record.events("join_completed"))")
            let outer = record.events("join_completed").first { $0["join"] as? String == "outer" }
            #expect(outer?["status"] as? String == "succeeded", "\(record.events("join_completed"))")
            #expect(record.status("a") == "cancelled" && record.finished("a")?["reason"] as? String == "join_settled", "\(record.statuses)")
            // Cancelled by the join whose quorum was met, not by the inner join, which had not what it needed.
            #expect(record.finished("a")?["cancelled_by"] as? String == "outer", "\(String(describing: record.finished("a")))")
            #expect(record.status("after") == "succeeded", "\(record.statuses)")
            #expect(!run.stdout.contains("join     inner failed"), "\(run.stdout)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}

import Foundation
import Testing

extension RunEndToEnd {
    /// A `line` probe's pattern was matched on the event loop's thread, and
    /// Swift's regex matching cannot be interrupted: `^(a+)+$` on a line of
    /// forty `a`s and a `!` (2^40 ways to backtrack) stalled every task's
    /// output, the reaper, the probe's timeout and SIGTERM for good — the run
    /// hung until `kill -9`. Now the line is matched on the probe's own
    /// queue: the probe times out saying why, and the other tasks go on.
    @Suite struct ServiceLineProbeBacktrackingTests {
        @Test func aCatastrophicallyBacktrackingLinePatternFailsTheProbeAfterItsTimeoutAndStallsNothingElse() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  svc:
                    service: true
                    run: |
                      printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\\n'
                      sleep 30
                    ready: { line: "^(a+)+$", timeout: 2s }
                  dep:
                    needs: [svc]
                    run: echo never
                  other:
                    run: for i in 1 2 3; do echo tick $i; sleep 0.3; done
                """, timeout: .seconds(25))
            #expect(!run.timedOut, "the run hung: \(run)")
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["svc": "failed", "dep": "skipped", "other": "succeeded"], "\(run)")
            let reason = record.finished("svc")?["reason"] as? String ?? ""
            #expect(reason.hasPrefix("not ready after 2s: no line of its output matched /^(a+)+$/"), "\(reason)")
            #expect(reason.contains("backtracks catastrophically"), "\(reason)")
            #expect(run.wallSeconds < 12, "\(run.wallSeconds)s")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEnd {
    /// How `flowrun watch` ends on Ctrl-C (RUNNING.md "Watch": exit 130), with the built binary.
    @Suite struct WatchCtrlCExitTests {
        typealias Watch = WatchTests

        /// Ctrl-C between runs, after a run that failed: the watch exits 130, as
        /// the docs say, not the failed run's 1 (that run's record says it failed).
        @Test func ctrlCAfterAFailedRunExits130() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("src"), withIntermediateDirectories: true)
            try Watch.write(sandbox, "src/a", "ok\n")
            let live = try Watch.watch(sandbox, """
                tasks:
                  check:
                    sources: [src/a]
                    run: grep -q ok src/a
                """)
            #expect(Watch.waitForRuns(sandbox, 1), "the first run never finished")
            try Watch.write(sandbox, "src/a", "bad\n")
            #expect(Watch.waitForRuns(sandbox, 2), "no run after the change")
            #expect(Watch.runs(sandbox).count >= 2 && Watch.runs(sandbox)[1].exitCode == 1)
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}

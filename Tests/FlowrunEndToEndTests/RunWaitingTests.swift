import Foundation
import Testing

extension RunEndToEnd {
    /// A task that is ready but cannot get its slots says what it waits on,
    /// and who holds it (issue 4: "waiting: db 1/1 held by restore").
    @Suite struct RunWaitingTests {
        @Test func aWaitingTaskNamesTheLimitAndWhoHoldsIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 4
                semaphores: {db: 1}
                tasks:
                  restore: {run: "sleep 0.3", semaphores: [db]}
                  index: {run: "true", semaphores: [db], needs: []}
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let waiting = record.events("task_waiting", task: "index")
            #expect(waiting.count == 1, "\(record.overview)")
            #expect(waiting.first?["waiting_on"] as? [String] == ["semaphore db 1/1 held by restore"], "\(record.overview)")
            #expect(run.stdout.contains("waiting  index: semaphore db 1/1 held by restore"), "\(run)")
        }
    }
}

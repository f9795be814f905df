@testable import FlowrunEngine
import FlowrunModel
import Foundation
import Testing

/// The Slurm executor's pure pieces: what `squeue`/`sacct` say, the
/// `sbatch` flags (the job scripts: `SlurmJobScriptTests`). (The executor itself runs on a real cluster: `SlurmTests`.)
@Suite struct SlurmPiecesTests {
    @Test func squeueLinesGiveEachJobsStateAndNode() {
        let states = SlurmQueueState.parseSqueue("12_0|RUNNING|n1\n12_1|PENDING|\n13|NODE_FAIL|n2\n\n")
        #expect(states["12_0"] == SlurmJobState(state: "RUNNING", node: "n1"))
        #expect(states["12_1"] == SlurmJobState(state: "PENDING", node: nil))
        #expect(states["13"]?.isFinal == true && states["13"]?.reason == "slurm: NODE_FAIL")
        #expect(states["12_0"]?.isFinal == false && states["12_1"]?.reason == nil)
        #expect(SlurmJobState(state: "COMPLETED", node: nil).isFinal && SlurmJobState(state: "COMPLETED", node: nil).reason == nil)
    }

    @Test func sacctLinesLeaveStepsOutAndKeepTheStatesFirstWord() {
        let states = SlurmQueueState.parseSacct("20|CANCELLED by 0\n20.batch|CANCELLED\n21_3|OUT_OF_MEMORY\n")
        #expect(states.count == 2)
        #expect(states["20"]?.state == "CANCELLED" && states["21_3"]?.reason == "slurm: OUT_OF_MEMORY")
    }

    @Test(arguments: [
        ("slurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2026-11-29T07:00:00 DUE TO TIME LIMIT ***", "TIMEOUT"),
        ("*** JOB 7 ON n1 CANCELLED AT 2026-11-29T07:00:00 DUE TO NODE FAILURE ***", "NODE_FAIL"),
        ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=7.batch", "OUT_OF_MEMORY"),
        ("*** JOB 7 ON n1 CANCELLED AT 2026-11-29T07:00:00 ***", "CANCELLED"),
    ])
    func slurmsOwnMessageNamesTheState(message: String, state: String) {
        #expect(SlurmQueueState.stateFromJobOutput(message) == state)
    }

    @Test func onlyABusyOrUnreachableControllerIsTransient() {
        #expect(SlurmQueueState.isTransient("sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"))
        #expect(SlurmQueueState.isTransient("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying"))
        #expect(!SlurmQueueState.isTransient("sbatch: error: Batch job submission failed: Invalid partition name specified"))
    }

    @Test func timeoutsBecomeSlurmsDaysHoursMinutesSeconds() {
        #expect(SlurmArguments.time(.seconds(90)) == "0-00:01:30")
        #expect(SlurmArguments.time(.milliseconds(1500)) == "0-00:00:02")
        #expect(SlurmArguments.time(.seconds(26 * 3600 + 5)) == "1-02:00:05")
        #expect(SlurmArguments.array(count: 200, concurrency: 50) == "--array=0-199%50")
        #expect(SlurmArguments.array(count: 3, concurrency: nil) == "--array=0-2")
    }
}

import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord
import FlowrunEngine
import FlowrunReporting

/// Runs a plan with the console reporter `--output` asks for and exits with
/// the run's code: what `flowrun [run]` and `resume` share.
enum RunLauncher {
    /// `keep`: how many run records to keep (pruning older ones as the run
    /// starts). `identities`: nil computes them when the engine needs them.
    static func run(
        _ plan: consuming Plan, logDirectory: String?, keep: Int, output: RunCommand.OutputMode, stream: Bool, reuse: TaskReuse,
        identities: [String: TaskIdentity]? = nil, watch: Bool = false
    ) throws {
        // The supervisor split main put off, made now on this one thread, or
        // skipped when no task can start: a process that guards nothing is a
        // fork, a socket pair and a wait at exit a no-op run pays for nothing.
        var identities = identities
        // One snapshot file read for the state's files, if none changed since it was taken (a
        // watch's later runs read the files: the snapshot's check holds for one run).
        if !watch { reuse.store?.useSnapshot() }
        if let store = reuse.store, !watch, reuse.restored.isEmpty, plan.workflow.slurmExecutorLocations.isEmpty {
            let computed = identities ?? TaskIdentities.compute(for: plan)
            identities = computed
            if IncrementalPreview.startsNoTask(plan, store: store, identities: computed) { Supervisor.runsNoTask() }
        }
        Supervisor.splitNow()
        // Before the record and before Dispatch, which traps when it finds no descriptor.
        if let problem = DescriptorLimit.problemForARun() {
            Terminal.standardError.write(problem + "\n")
            throw ExitCode(1)
        }
        // Slurm's commands, looked for before anything is made: a missing one stops the run here.
        var slurmTools: SlurmTools?
        if let place = plan.workflow.slurmExecutorLocations.first {
            switch SlurmTools.find(searchPath: getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin") {
            case .success(let tools): slurmTools = tools
            case .failure(let missing):
                Terminal.standardError.write("\(place): error: executor: slurm needs '\(missing.name)', which is not on PATH: install Slurm's client commands (Debian: apt-get install slurm-client), or give these tasks executor: local\n")
                throw ExitCode(2)
            }
        }
        let record: RunRecord
        do {
            record = try newRecord(logDirectory: logDirectory, keep: keep)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(2)
        }
        let (reporter, hearsLines) = consoleReporter(output: output, stream: stream)
        // Handed over (`consume`): the engine keeps the only copy, without the workflow's own definitions.
        let engine = RunEngine(
            plan: (consume plan).forRunning(), record: record, reporters: [reporter], streamsOutput: hearsLines, identities: identities)
        engine.reuse = reuse
        engine.slurmTools = slurmTools
        if watch {
            // Each later run of the watch: a record and a console of its own, made the same way.
            engine.watches {
                let record = try newRecord(logDirectory: logDirectory, keep: keep)
                return (record, [consoleReporter(output: output, stream: stream).reporter])
            }
        }
        let outcome = engine.run()
        reuse.store?.saveSnapshot()
        // The console's last lines, waited for a bounded time only (a reader
        // that stalls must not hold the exit), and the count of lines dropped.
        ConsoleWriter.settle()
        // Out at once: freeing every node, and ArgumentParser describing an
        // ExitCode, is a millisecond or two nobody waits for.
        withExtendedLifetime(engine) { Terminal.exit(outcome.exitCode) }
    }

    /// A run's record, marked the latest, older ones pruned.
    private static func newRecord(logDirectory: String?, keep: Int) throws -> RunRecord {
        let record = try RunRecord(baseDirectory: logDirectory)
        if let problem = record.markLatest() {
            Terminal.standardError.write("flowrun: warning: \(problem)\n")
        }
        for problem in record.pruneOlderRecords(keeping: keep) {
            Terminal.standardError.write("flowrun: pruning old run records: \(problem)\n")
        }
        return record
    }

    /// The console reporter `--output` asks for, and whether it hears every line of output.
    private static func consoleReporter(output: RunCommand.OutputMode, stream: Bool) -> (reporter: any RunReporter, hearsLines: Bool) {
        let reporter: any RunReporter
        // The live view's rows show each running task's latest line: it hears every line on a terminal.
        var hearsLines = stream
        // A run that starts no task waits for nothing: its lines are handed over at its end.
        let handsOverAtEnd = Supervisor.skippedAsNoOp
        switch output {
        case .json: reporter = JSONLinesReporter(handsOverAtEnd: handsOverAtEnd)
        case .plain: reporter = PlainReporter(handsOverAtEnd: handsOverAtEnd)
        // Not on a terminal, `tty` prints the view's lasting lines (finished
        // tasks, join blocks, summary) with no live region and no escapes.
        case .tty, .auto:
            if output == .auto && !Terminal.standardOutput.showsLiveView {
                reporter = PlainReporter(handsOverAtEnd: handsOverAtEnd)
            } else {
                let live = LiveTerminalReporter(streams: stream)
                hearsLines = hearsLines || live.drawsRegion
                reporter = live
            }
        }
        return (reporter, hearsLines)
    }
}

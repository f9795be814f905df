import ArgumentParser
import FlowrunModel
import FlowrunValues
import FlowrunPlanning
import FlowrunEvents
import FlowrunRecord
import FlowrunEngine
import FlowrunReporting

/// Runs a plan with the console reporter `--output` asks for and exits with
/// the run's code: what `resume` shares with a run.
enum RunLauncher {
    static func run(_ plan: Plan, logDirectory: String?, output: RunCommand.OutputMode, stream: Bool, reuse: TaskReuse, identities: [String: TaskIdentity]) throws {
        let record: RunRecord
        do {
            record = try RunRecord(baseDirectory: logDirectory)
        } catch {
            Terminal.standardError.write("flowrun: \(error)\n")
            throw ExitCode(2)
        }
        let reporter: any RunReporter
        var hearsLines = stream
        switch output {
        case .json: reporter = JSONLinesReporter()
        case .plain: reporter = PlainReporter()
        case .tty, .auto:
            if output == .auto && !Terminal.standardOutput.showsLiveView {
                reporter = PlainReporter()
            } else {
                let live = LiveTerminalReporter(streams: stream)
                hearsLines = hearsLines || live.drawsRegion
                reporter = live
            }
        }
        let engine = RunEngine(plan: plan, record: record, reporters: [reporter], streamsOutput: hearsLines)
        engine.reuse = reuse
        engine.identities = identities
        let outcome = engine.run()
        ConsoleWriter.settle()
        withExtendedLifetime(engine) { Terminal.exit(outcome.exitCode) }
    }
}

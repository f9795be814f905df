import Foundation
import Testing

extension RunEndToEndParallel {
    /// `prompt:` (SPEC §15): asked on the terminal before the run starts;
    /// y runs, anything else or no terminal runs nothing (exit 1), `--yes`
    /// answers for the user.
    @Suite struct PromptTests {
        static let workflow = """
            tasks:
              build: { run: echo built >> "$SANDBOX/ran" }
              deploy:
                prompt: Deploy to prod?
                needs: [build]
                run: echo deployed >> "$SANDBOX/ran"
            """

        @Test func withoutATerminalNothingRunsUnlessYes() throws {
            let sandbox = try RunSandbox()
            let setsid = try RunSandbox.tool("setsid")
            // setsid: a session of its own, so no controlling terminal (/dev/tty) whatever runs the tests.
            let refused = try sandbox.run(wrapped: [setsid, "-w"], Self.workflow)
            #expect(refused.exitStatus == 1, "\(String(describing: sandbox.read("stderr")))")
            #expect(sandbox.read("stderr")?.contains(#"'deploy' asks "Deploy to prod?" and there is no terminal to answer on; nothing ran (run with --yes to answer y)"#) == true)
            #expect(!sandbox.exists("ran"))
            // A dry run asks nothing: it shows the question.
            let plan = try sandbox.run(Self.workflow, ["--dry-run"])
            #expect(plan.exitStatus == 0, "\(plan)")
            #expect(plan.stdout.contains("      prompt:    Deploy to prod? (asked before the run; --yes answers y)\n"), "\(plan)")
            let yes = try sandbox.run(Self.workflow, ["--yes"])
            #expect(yes.exitStatus == 0, "\(yes)")
            #expect(sandbox.lines("ran") == ["built", "deployed"])
        }

        @Test func theAnswerAtTheTerminalDecides() throws {
            let setsid = try RunSandbox.tool("setsid")
            for (answer, ran) in [("y\n", ["built", "deployed"]), ("n\n", [])] {
                let terminal = try PseudoTerminal()
                let sandbox = try RunSandbox()
                let flowrun = try sandbox.start(
                    Self.workflow, hardTimeout: .seconds(30),
                    wrapper: ["/bin/sh", "-c", "exec \(setsid) -w -c \"$@\" < \(terminal.devicePath)", "sh"])
                var shown = ""
                // The question on the terminal is the handshake: answered only once asked.
                #expect(poll(until: .seconds(15)) {
                    shown += terminal.drain()
                    return shown.contains("Deploy to prod? [y/N] (deploy) ")
                }, "the prompt never showed: \(shown)")
                #expect(!sandbox.exists("ran"), "a task ran before the answer")
                #expect(terminal.type(Array(answer.utf8)))
                let ended = flowrun.finish()
                #expect(ended.exitStatus == (ran.isEmpty ? 1 : 0), "\(ended)")
                #expect(sandbox.lines("ran") == ran)
            }
        }
    }
}

import Foundation
import Testing

extension RunEndToEndParallel {
    /// `--stream`: what a task prints on stdout shows up live, a whole line at
    /// a time, prefixed with the task's name; progress lines stay out.
    @Suite struct RunStreamTests {
        @Test func streamedLinesCarryTheTaskNameAndComeBeforeTheTaskFinishes() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  a: {run: "echo one; echo '::progress::50'; printf 'two\\\\nthree'"}
                  b: {run: "printf 'x%.0s' $(seq 1 3000); echo; echo b-out", needs: a}
                """, ["--stream"])
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0.hasPrefix("a | ") } == ["a | one", "a | two", "a | three"], "\(run)")
            #expect(lines.contains("b | " + String(repeating: "x", count: 3000)), "a long line arrives whole\n\(run)")
            let lastOfA = try #require(lines.firstIndex(of: "a | three"))
            let finishedA = try #require(lines.firstIndex { $0.contains(" ok ") && $0.hasSuffix(" a (0.0s)") || $0.range(of: #"ok +a \("#, options: .regularExpression) != nil })
            #expect(lastOfA < finishedA, "\(run)")
            #expect(!run.stdout.contains("::progress::"), "\(run)")
        }

        @Test func withoutStreamNothingOfTheTasksOutputIsPrinted() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("tasks: {a: {run: \"echo secret-line\"}}")
            #expect(run.exitStatus == 0, "\(run)")
            #expect(!run.stdout.contains("secret-line"), "\(run)")
        }
    }
}

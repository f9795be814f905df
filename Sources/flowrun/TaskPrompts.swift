import ArgumentParser
import FlowrunModel
import FlowrunPlanning
import FlowrunValues
#if canImport(Glibc)
import Glibc
#endif

/// `prompt: "Deploy to prod?"` (SPEC §15): asked on the terminal before the
/// run starts, for every task of the plan that has one, in plan order. Any
/// answer but y or yes — or no terminal to ask on (`/dev/tty` cannot be
/// opened: cron, CI, a pipe) — stops the run before anything ran, exit 1.
/// `--yes` answers y to all. Asked before the run, not when the task is
/// reached: a run is not left half done waiting for someone to come back.
enum TaskPrompts {
    static func ask(_ plan: Plan, yes: Bool) throws {
        let prompts = plan.steps.compactMap { step in step.task?.prompt.map { (task: step.name, question: $0.value) } }
        guard !prompts.isEmpty, !yes else { return }
        let masked = { (text: String) in TerminalText.escaped(plan.secretMasker?.mask(text) ?? text) }
        let terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else {
            let first = prompts[0]
            Terminal.standardError.write(
                "flowrun: '\(masked(first.task))' asks \"\(masked(first.question))\" and there is no terminal to answer on; nothing ran (run with --yes to answer y)\n")
            throw ExitCode(1)
        }
        defer { close(terminal) }
        for prompt in prompts {
            let question = "\(masked(prompt.question)) [y/N] (\(masked(prompt.task))) "
            _ = question.utf8CString.withUnsafeBufferPointer { write(terminal, $0.baseAddress, $0.count - 1) }
            let answer = line(from: terminal).trimmingCharacters(in: [" ", "\t", "\r"]).lowercased()
            guard answer == "y" || answer == "yes" else {
                Terminal.standardError.write("flowrun: '\(masked(prompt.task))' was not confirmed; nothing ran\n")
                throw ExitCode(1)
            }
        }
    }

    /// One line typed at the terminal, without its newline ("" at end of input).
    private static func line(from terminal: Int32) -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 1024 {
            let count = read(terminal, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1, byte != 0x0A else { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text.removeFirst() }
        while let last = text.last, set.contains(last) { text.removeLast() }
        return String(text)
    }
}

package import FlowrunModel

/// Fills in a template's `${{ }}` parts: as shell words inside `run:`, as text elsewhere.
///
/// `.shell`: each value is written for the shell context it lands in
/// (`ShellContextScanner`, `ShellQuoting`) so that the shell reads back
/// exactly its text and runs none of it: as a word it is one single-quoted
/// word — `'` + the value with each `'` written `'\''` + `'`; the empty
/// string becomes `''`. Inside single quotes a POSIX shell interprets
/// nothing (`$`, backticks, `\`, `"`, newlines, globs, `~` are all literal),
/// and the one character that ends the quote is handled by closing, escaping
/// and reopening. The scan is over bytes, not `Character`s: `'` followed by
/// a combining mark is one `Character` but still a quote to the shell.
///
/// `.text`: the value is inserted as is.
///
/// NUL bytes: a process cannot receive them in its arguments or environment
/// (C strings end there), so a value holding one would arrive cut short.
/// Rather than alter the value silently, rendering fails — in both modes —
/// and the engine fails the task with the error's message. So it does for a
/// value longer than 1 MiB (`ValueLimit`).
package enum TemplateRenderer {
    package enum Mode: Sendable {
        /// `run:` scripts a shell reads: each value quoted for its shell context.
        case shell
        /// `run:` scripts of another interpreter (`shell: python3`, `#!/usr/bin/env node`): each value one single-quoted word.
        case interpreter
        /// `env`, `cwd`, `http`, a fan-out `name`: values as they are.
        case text
    }

    package static func render(_ template: Template, mode: Mode, in context: some ExpressionContext) throws(TemplateRenderError) -> String {
        var result = ""
        let segments = template.segments
        // Each value is quoted for the place it lands in (SPEC §11); a script without values is not read.
        var points = mode == .shell && segments.count > 1 ? ShellContextScanner.insertionPoints(in: segments)[...] : []
        for segment in segments {
            switch segment {
            case .text(let text):
                guard !text.containsNUL else {
                    throw TemplateRenderError(location: template.location, message: "the text contains a NUL byte, which cannot be passed to a process")
                }
                result += text
            case .expression(let expression, let location):
                try ValueLimit.check(expression, at: location, in: context)
                let value = try ExpressionEvaluator.evaluate(expression, at: location, in: context).text
                try ValueLimit.check(value: value, of: expression, at: location)
                guard !value.containsNUL else {
                    throw TemplateRenderError(
                        location: location,
                        message: "the value of ${{ \(expression) }} contains a NUL byte, which cannot be passed to a process")
                }
                switch mode {
                case .shell:
                    let point = points.popFirst() ?? ShellInsertionPoint(.word)
                    do throws(ShellQuoting.Refusal) {
                        result += try ShellQuoting.text(value, at: point, literal: expression.isStringLiteral)
                    } catch {
                        throw TemplateRenderError(location: location, message: "the value of ${{ \(expression) }} \(error.reason)")
                    }
                case .interpreter: result += expression.isStringLiteral ? ShellQuoting.word(value) : shellWord(value)
                case .text: result += value
                }
            }
        }
        return result
    }

    /// `value` as one single-quoted POSIX shell word.
    /// The mode for a `run:` script launched as `launch` says.
    package static func scriptMode(_ launch: ScriptLaunch) -> Mode {
        launch.readsAsShell ? .shell : .interpreter
    }

    package static func shellWord(_ value: String) -> String {
        // Bytes, not String slices: String indices round down to Character
        // boundaries, which would re-include a quote that a combining mark
        // follows.
        var bytes: [UInt8] = [0x27]
        bytes.reserveCapacity(value.utf8.count + 2)
        for byte in value.utf8 {
            if byte == 0x27 {
                bytes.append(contentsOf: [0x27, 0x5C, 0x27, 0x27])  // '\''
            } else {
                bytes.append(byte)
            }
        }
        bytes.append(0x27)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Why a template could not be filled in; the task fails with this message.
package struct TemplateRenderError: Error, Sendable, Hashable, CustomStringConvertible {
    package var location: SourceLocation
    package var message: String

    package init(location: SourceLocation, message: String) {
        self.location = location
        self.message = message
    }

    /// `w.yaml:4:12: the value of ${{ tasks.a.stdout }} contains a NUL byte, …`
    package var description: String { "\(location): \(message)" }
}

extension Expression {
    /// A string literal: a template parameter's text in `run:`, written bare when it is one plain word.
    var isStringLiteral: Bool {
        if case .string = self { return true }
        return false
    }
}

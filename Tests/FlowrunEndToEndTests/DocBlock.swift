import Foundation

/// One fenced code block of a markdown document, with the marker comment
/// written on the line before it (the conventions are at the top of
/// docs/FORMAT.md, "How the examples are checked").
struct DocBlock: CustomStringConvertible {
    /// What the HTML comment right before the fence asks of the block.
    enum Marker: Equatable {
        case none
        /// `<!-- fragment: WHY -->`: a YAML piece that is not a whole workflow.
        case fragment(String)
        /// `<!-- invalid -->`: a YAML example that must fail with the error shown after it.
        case invalid
        /// `<!-- not-run: WHY -->`: a console block the test cannot run.
        case notRun(String)
        /// `<!-- not-flowrun: WHY -->`: another tool's YAML (a Taskfile, an Argo manifest).
        case notFlowrun(String)
        /// A comment that looks like a marker but is none of the above.
        case unknown(String)
    }

    var document: String
    /// The 1-based line of the opening fence.
    var line: Int
    /// What follows the backticks: `yaml`, `console`, `text`, or empty.
    var language: String
    /// The block's lines, without the fence's indentation.
    var lines: [String]
    var marker: Marker

    var place: String { "\(document):\(line)" }
    var description: String { "\(place) (```\(language))" }

    /// `NAME` when the first line is a comment `# NAME.yaml` (or `.yml`), else nil.
    var fileName: String? {
        guard let first = lines.first?.trimmingCharacters(in: .whitespaces), first.hasPrefix("# ") else { return nil }
        let name = String(first.dropFirst(2)).trimmingCharacters(in: .whitespaces)
        guard name.hasSuffix(".yaml") || name.hasSuffix(".yml"), !name.contains(" "), !name.contains("/") else { return nil }
        return name
    }

    var text: String { lines.joined(separator: "\n") + "\n" }

    /// Every fenced block of `markdown`, in order.
    static func blocks(in markdown: String, document: String) -> [DocBlock] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var blocks: [DocBlock] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            // An opening fence is ``` and a language word, nothing else on the line.
            guard trimmed.hasPrefix("```"), trimmed.dropFirst(3).allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                index += 1
                continue
            }
            let indentation = line.prefix { $0 == " " }.count
            let language = String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces)
            var body: [String] = []
            var end = index + 1
            while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" {
                let content = lines[end]
                let leading = content.prefix { $0 == " " }.count
                body.append(String(content.dropFirst(min(leading, indentation))))
                end += 1
            }
            blocks.append(DocBlock(
                document: document, line: index + 1, language: language, lines: body,
                marker: marker(before: index, in: lines)))
            index = end + 1
        }
        return blocks
    }

    /// The marker in the nearest non-blank line above the fence, if that line is an HTML comment.
    private static func marker(before fence: Int, in lines: [String]) -> Marker {
        var index = fence - 1
        while index >= 0, lines[index].trimmingCharacters(in: .whitespaces).isEmpty { index -= 1 }
        guard index >= 0 else { return .none }
        let line = lines[index].trimmingCharacters(in: .whitespaces)
        guard line.hasPrefix("<!--"), line.hasSuffix("-->") else { return .none }
        let content = line.dropFirst(4).dropLast(3).trimmingCharacters(in: .whitespaces)
        let (word, reason) = content.firstIndex(of: ":").map {
            (String(content[..<$0]), content[content.index(after: $0)...].trimmingCharacters(in: .whitespaces))
        } ?? (content, "")
        switch word {
        case "fragment" where !reason.isEmpty: return .fragment(reason)
        case "not-run" where !reason.isEmpty: return .notRun(reason)
        case "not-flowrun" where !reason.isEmpty: return .notFlowrun(reason)
        case "invalid" where reason.isEmpty: return .invalid
        default: return .unknown(content)
        }
    }
}

/// A `$ command` of a console block and the output shown under it.
struct ShownCommand {
    /// The command without its `$ `; continuation lines (`\` at the end) joined.
    var command: String
    var output: [String]
    /// The 1-based line in the document.
    var line: Int

    /// The commands of a console block; text before the first `$ ` line is ignored.
    static func commands(in block: DocBlock) -> [ShownCommand] {
        var commands: [ShownCommand] = []
        var continuing = false
        for (offset, line) in block.lines.enumerated() {
            if continuing, var last = commands.popLast() {
                last.command += "\n" + line
                commands.append(last)
                continuing = line.hasSuffix("\\")
            } else if line.hasPrefix("$ ") {
                commands.append(ShownCommand(command: String(line.dropFirst(2)), output: [], line: block.line + 1 + offset))
                continuing = line.hasSuffix("\\")
            } else if var last = commands.popLast() {
                last.output.append(line)
                commands.append(last)
            }
        }
        return commands
    }
}

package import FlowrunModel
import FlowrunLoading
package import Foundation
package import Testing

/// Parses the inside of `${{ }}` the way the validator does.
package func runtimeExpression(_ text: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> FlowrunModel.Expression {
    var names = NameTable()
    for name in ["a", "b", "build", "list"] { names.kinds[name] = .task }
    names.kinds["g"] = .group
    names.kinds["j"] = .join
    var parser = ExpressionParser(names: names) { offset in
        FlowrunModel.SourceLocation(file: "test.yaml", line: 1, column: 1 + offset)
    }
    do throws(ExpressionError) {
        return try parser.parse(text)
    } catch {
        Issue.record("\(text): \(error.message)", sourceLocation: sourceLocation)
        throw error
    }
}

package struct ExpressionParseFailure: Error {}

/// A template from text with `${{ … }}` parts; each expression is located at
/// line 1, at the column of its `${{`.
package func runtimeTemplate(_ source: String) throws -> Template {
    var segments: [Template.Segment] = []
    var rest = Substring(source)
    while let open = rest.range(of: "${{") {
        if open.lowerBound > rest.startIndex { segments.append(.text(String(rest[..<open.lowerBound]))) }
        let inner = rest[open.upperBound...]
        guard let close = inner.range(of: "}}") else { throw ExpressionParseFailure() }
        let column = source.distance(from: source.startIndex, to: open.lowerBound) + 1
        segments.append(.expression(try runtimeExpression(String(inner[..<close.lowerBound])),
                                    FlowrunModel.SourceLocation(file: "test.yaml", line: 1, column: column)))
        rest = inner[close.upperBound...]
    }
    if !rest.isEmpty { segments.append(.text(String(rest))) }
    return Template(source: source, segments: segments, location: FlowrunModel.SourceLocation(file: "test.yaml", line: 1, column: 1))
}

/// Reproducible randomness for property tests (SplitMix64).
package struct SeededGenerator: RandomNumberGenerator {
    package var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Text that shells, parsers and line splitters find hard: quotes, `$`,
/// backticks, `\`, globs, newlines and CRs, `=`, `<<`, combining marks right
/// after a quote, emoji, and any other valid scalar but NUL.
package func randomHostileString(using generator: inout SeededGenerator, maxLength: Int = 40) -> String {
    let specials: [String] = [
        "'", "\"", "`", "$", "$(", "${", "\\", "*", "?", "[", "]", "~", "-", "--", "#", ";", "&", "|", "<", ">", "<<",
        "(", ")", "{", "}", "!", "=", "\n", "\r", "\r\n", "\t", " ", "%s", "%", "'\u{301}", "\u{301}", "é", "😀",
        "👩‍👩‍👧", "中", "\u{2028}", "\u{FEFF}", "\u{1}", "\u{1B}[31m", "\u{7F}", "EOF", "touch pwned", "::progress::50",
    ]
    var text = ""
    for _ in 0..<Int.random(in: 0...maxLength, using: &generator) {
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<5: text += specials.randomElement(using: &generator)!
        case 5..<8: text.unicodeScalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &generator)))
        default:
            // Any scalar except NUL and the surrogate gap.
            var value = UInt32.random(in: 1...0x10FFFF, using: &generator)
            if (0xD800...0xDFFF).contains(value) { value -= 0x800 }
            text.unicodeScalars.append(Unicode.Scalar(value)!)
        }
    }
    return text
}

/// Runs `SHELL -c SCRIPT` in `directory` and returns its stdout bytes.
package func runShell(_ shell: String, _ script: String, in directory: URL) throws -> (stdout: [UInt8], stderr: String, status: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: shell)
    process.arguments = ["-c", script]
    process.currentDirectoryURL = directory
    let stdout = Pipe(), stderr = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let errors = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ([UInt8](output), String(decoding: errors, as: UTF8.self), process.terminationStatus)
}

/// A fresh empty directory, removed by the caller.
package func makeScratchDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("flowrun-values-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
    return url
}

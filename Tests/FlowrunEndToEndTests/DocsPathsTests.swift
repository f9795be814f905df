import Foundation
import Testing

/// The docs name files and tests (ARCHITECTURE maps each concept to its
/// file; GUARANTEES and SECURITY prove each promise with a named test). A
/// rename or a removal that forgets the docs fails here, naming the document
/// and what it names.
@Suite struct DocsPathsTests {
    /// The package's root, found from this file so the tests work from any directory.
    static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // FlowrunEndToEndTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the package
        .path

    static let documents = ["docs/ARCHITECTURE.md", "docs/GUARANTEES.md", "docs/SECURITY.md"]
    /// The documents whose tables name a test file followed by its tests.
    static let proofDocuments = ["docs/GUARANTEES.md", "docs/SECURITY.md"]

    @Test(arguments: documents)
    func everyRepositoryPathTheDocumentNamesExists(_ document: String) throws {
        let text = try Self.read(document)
        let paths = DocReferences.repositoryPaths(in: text)
        // A document that names no path (or a parser that finds none) proves nothing.
        #expect(paths.count >= 5, "\(document) names only \(paths)")
        for path in paths {
            let exists = FileManager.default.fileExists(atPath: Self.root + "/" + path)
            #expect(exists, "\(document) names `\(path)`, which does not exist")
        }
    }

    @Test(arguments: documents)
    func everyRelativeLinkOfTheDocumentLeadsToAFile(_ document: String) throws {
        let text = try Self.read(document)
        let folder = (document as NSString).deletingLastPathComponent
        for target in DocReferences.relativeLinkTargets(in: text) {
            let path = (Self.root + "/" + folder + "/" + target as NSString).standardizingPath
            let exists = FileManager.default.fileExists(atPath: path)
            #expect(exists, "\(document) links to \(target), which does not exist")
        }
    }

    @Test(arguments: proofDocuments)
    func everyTestTheDocumentNamesExistsInTheFileItNames(_ document: String) throws {
        let text = try Self.read(document)
        let testFiles = Self.filesUnderTests()
        let references = DocReferences.testReferences(in: text)
        #expect(references.count >= 5, "\(document): found only \(references.count) named tests")
        var sources: [String: String] = [:]
        for reference in references {
            let candidates = reference.file.contains("/")
                ? [reference.file]
                : testFiles.filter { ($0 as NSString).lastPathComponent == reference.file }
            guard candidates.count == 1, let file = candidates.first else {
                Issue.record("\(document) names `\(reference.file)` (for `\(reference.test)`): \(candidates.isEmpty ? "no such file under Tests/" : "ambiguous: \(candidates)")")
                continue
            }
            if sources[file] == nil { sources[file] = try? String(contentsOfFile: Self.root + "/" + file, encoding: .utf8) }
            guard let source = sources[file] else {
                Issue.record("\(document) names `\(file)`, which cannot be read")
                continue
            }
            // A Bool first: `#expect` would print the whole source file.
            let declared = DocReferences.declaresFunction(named: reference.test, in: source)
            #expect(declared, "\(document) names `\(reference.test)` in `\(file)`, which has no `func \(reference.test)`")
        }
    }

    /// The parser itself, on a table cell shaped like the documents' cells.
    @Test func theTableParserFollowsFileNamesAndTheirTests() {
        let text = """
            | promise | how (`O_NOFOLLOW\\|O_EXCL`) | `Tests/A/One.swift` `first()`, `second(umask:)`; `TwoTests.swift` `third` (under `prlimit --fsize`, as `nobody`) |
            | other | `Sources/X.swift` `notATest`, `Helper.swift` `norThis` | plain words |
            ```
            `Sources/InAFence.swift`
            ```
            """
        let found = DocReferences.testReferences(in: text).map { "\($0.file) \($0.test)" }
        #expect(found == ["Tests/A/One.swift first", "Tests/A/One.swift second", "TwoTests.swift third"])
        #expect(DocReferences.repositoryPaths(in: text) == ["Tests/A/One.swift", "Sources/X.swift"])
        #expect(DocReferences.declaresFunction(named: "first", in: "@Test func first() {}"))
        #expect(!DocReferences.declaresFunction(named: "first", in: "@Test func firstOfTwo() {}"))
    }

    static func read(_ document: String) throws -> String {
        try String(contentsOfFile: root + "/" + document, encoding: .utf8)
    }

    /// Every file under `Tests/`, as a path from the package root.
    static func filesUnderTests() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root + "/Tests")
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            if path.hasSuffix(".swift") { files.append("Tests/" + path) }
        }
        return files
    }
}

/// What a markdown document names: backticked repository paths, relative
/// links, and in table cells a test file followed by its test functions.
enum DocReferences {
    static let repositoryFolders = ["Sources/", "Tests/", "docs/", "workflows/"]

    /// A test named after a test file in the same table cell.
    struct TestReference {
        var file: String
        var test: String
    }

    /// Backticked spans that start with one of `repositoryFolders`, in order, without repeats.
    static func repositoryPaths(in text: String) -> [String] {
        var seen: Set<String> = []
        return codeSpans(in: text).filter { span in
            repositoryFolders.contains { span.hasPrefix($0) } && !span.contains(" ") && seen.insert(span).inserted
        }
    }

    /// The targets of `[text](target)` links that are not URLs or in-page anchors, anchors cut off.
    static func relativeLinkTargets(in text: String) -> [String] {
        var targets: [String] = []
        var rest = Substring(text)
        while let open = rest.range(of: "](") {
            rest = rest[open.upperBound...]
            guard let close = rest.firstIndex(of: ")") else { break }
            let target = String(rest[..<close].prefix { $0 != "#" })
            rest = rest[close...]
            if target.isEmpty || target.contains("://") || target.hasPrefix("mailto:") { continue }
            targets.append(target)
        }
        return targets
    }

    /// In each table cell: a backticked `….swift` is a file, and the backticked
    /// lowercase identifiers after it (`name`, `name()`, `name(arg:)`) are its tests,
    /// until the next file. Identifiers after any other file (under `Sources/`) are not tests,
    /// nor are spans in parentheses (a remark: "(the other user is uid 65534 through `setpriv`)").
    static func testReferences(in text: String) -> [TestReference] {
        var references: [TestReference] = []
        for line in text.split(separator: "\n") where line.hasPrefix("|") {
            for cell in cells(of: String(line)) {
                var file: String?
                for span in codeSpansOutsideParentheses(in: cell) {
                    if span.hasSuffix(".swift"), !span.contains(" ") {
                        file = isTestFile(span) ? span : nil
                    } else if let file, let name = testName(span) {
                        references.append(TestReference(file: file, test: name))
                    }
                }
            }
        }
        return references
    }

    /// `Tests/…/X.swift`, or a bare `XTests.swift` named earlier in full.
    static func isTestFile(_ span: String) -> Bool {
        span.hasPrefix("Tests/") || (!span.contains("/") && span.hasSuffix("Tests.swift"))
    }

    /// Whether `source` declares `func name` (followed by `(` or `<`).
    static func declaresFunction(named name: String, in source: String) -> Bool {
        var rest = Substring(source)
        while let found = rest.range(of: "func " + name) {
            let next = rest[found.upperBound...].first
            if next == "(" || next == "<" { return true }
            rest = rest[found.upperBound...]
        }
        return false
    }

    /// `name`, `name()` or `name(label:)` → `name`; anything else → nil.
    static func testName(_ span: String) -> String? {
        let name = span.prefix { $0 != "(" }
        guard let first = name.first, first.isLowercase, first.isASCII,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else { return nil }
        let arguments = span.dropFirst(name.count)
        guard arguments.isEmpty || (arguments.hasPrefix("(") && arguments.hasSuffix(")")) else { return nil }
        return String(name)
    }

    /// The single-backtick spans of one line that are not inside parentheses written outside spans.
    static func codeSpansOutsideParentheses(in line: String) -> [String] {
        var spans: [String] = []
        var depth = 0
        var span: String?
        for character in line {
            if character == "`" {
                if let finished = span {
                    if depth == 0 { spans.append(finished.trimmingCharacters(in: .whitespaces)) }
                    span = nil
                } else {
                    span = ""
                }
            } else if span != nil {
                span?.append(character)
            } else if character == "(" {
                depth += 1
            } else if character == ")" {
                depth = max(0, depth - 1)
            }
        }
        return spans
    }

    /// A table row's cells: split at `|` that is not escaped as `\|`.
    static func cells(of row: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var previous: Character?
        for character in row {
            if character == "|" && previous != "\\" {
                cells.append(current)
                current = ""
            } else {
                current.append(character)
            }
            previous = character
        }
        cells.append(current)
        return cells
    }

    /// The text of each single-backtick span, trimmed, outside fenced code blocks.
    static func codeSpans(in text: String) -> [String] {
        var spans: [String] = []
        var inFence = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inFence.toggle()
                continue
            }
            guard !inFence else { continue }
            // Odd parts are inside backticks (a span never crosses a line in these documents).
            let parts = line.split(separator: "`", omittingEmptySubsequences: false)
            spans += stride(from: 1, to: parts.count, by: 2).map { parts[$0].trimmingCharacters(in: .whitespaces) }
        }
        return spans
    }
}

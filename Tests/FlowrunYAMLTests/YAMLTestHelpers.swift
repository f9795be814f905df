import Foundation
import FlowrunYAML
import Testing

// Helpers shared by the loader tests.

/// Loads `text` as UTF-8.
func load(_ text: String, multipleDocuments: Bool = false) -> YAMLLoadResult {
    YAMLLoader(allowsMultipleDocuments: multipleDocuments).load(bytes: Array(text.utf8))
}

/// Loads `text`, expecting exactly one document and no problems.
func document(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> YAMLNode {
    let result = load(text)
    #expect(result.problems.isEmpty, "unexpected problems: \(result.problems)", sourceLocation: sourceLocation)
    return try #require(result.documents.first, sourceLocation: sourceLocation)
}

/// The mark of the first appearance of `needle` in `text`, so tests point
/// at the source instead of counting lines and columns.
func mark(of needle: String, in text: String) -> Mark {
    let found = text.range(of: needle)!
    var line = 1, column = 1
    for scalar in text[..<found.lowerBound].unicodeScalars {
        if scalar == "\n" { line += 1; column = 1 } else { column += 1 }
    }
    return Mark(line: line, column: column)
}

/// A compact rendering for whole-tree assertions: plain scalars bare, quoted ones in quotes.
func render(_ node: YAMLNode) -> String {
    switch node.content {
    case .scalar(let scalar):
        return scalar.style == .plain ? scalar.text : "\"\(scalar.text)\""
    case .sequence(let items):
        return "[" + items.map(render).joined(separator: ", ") + "]"
    case .mapping(let pairs):
        return "{" + pairs.map { render($0.key) + ": " + render($0.value) }.joined(separator: ", ") + "}"
    }
}

extension YAMLNode {
    /// The value under a scalar key, for navigating test documents.
    subscript(key: String) -> YAMLNode? {
        mapping?.first { $0.key.scalar?.text == key }?.value
    }
}

/// A fresh empty folder under the temporary directory, removed by `body`'s end.
func withTemporaryFolder<T>(_ body: (String) throws -> T) throws -> T {
    let folder = NSTemporaryDirectory() + "flowrun-yaml-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    return try body(folder)
}

/// SplitMix64: a small seeded generator, so random inputs are the same every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

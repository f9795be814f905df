/// A Kubernetes manifest as an ordered tree: mappings keep the order fields
/// are added in, so the emitted YAML reads the way Argo's examples do.
package indirect enum ManifestValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case list([ManifestValue])
    case map([(key: String, value: ManifestValue)])

    package static func == (a: ManifestValue, b: ManifestValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.list(let x), .list(let y)): return x == y
        case (.map(let x), .map(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// The value at `key` of a mapping.
    package subscript(key: String) -> ManifestValue? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }
}

/// Builds a mapping field by field, skipping absent optional values.
package struct ManifestMap: Sendable {
    package private(set) var pairs: [(key: String, value: ManifestValue)] = []

    package init() {}

    package mutating func set(_ key: String, _ value: ManifestValue?) {
        guard let value else { return }
        if let index = pairs.firstIndex(where: { $0.key == key }) {
            pairs[index].value = value
        } else {
            pairs.append((key, value))
        }
    }

    package mutating func set(_ key: String, _ text: String?) { set(key, text.map(ManifestValue.string)) }

    package var isEmpty: Bool { pairs.isEmpty }
    package var value: ManifestValue { .map(pairs) }
}

extension ManifestValue {
    /// Block-style YAML text for one document (no `---`), every string
    /// written by `YAMLScalarEmitter`, so it round-trips through any reader.
    package var yamlText: String {
        var lines: [String] = []
        emit(into: &lines, indent: "")
        return lines.joined(separator: "\n") + "\n"
    }

    private func emit(into lines: inout [String], indent: String) {
        switch self {
        case .map(let pairs) where !pairs.isEmpty:
            for pair in pairs { Self.emitEntry(prefix: indent + Self.key(pair.key) + ":", value: pair.value, childIndent: indent + "  ", into: &lines) }
        case .list(let items) where !items.isEmpty:
            for item in items { Self.emitListItem(item, indent: indent, into: &lines) }
        default:
            lines.append(indent + inline(indent: indent))
        }
    }

    /// `- ` followed by the item; a mapping's first field shares the dash's line.
    private static func emitListItem(_ item: ManifestValue, indent: String, into lines: inout [String]) {
        let childIndent = indent + "  "
        switch item {
        case .map(let pairs) where !pairs.isEmpty:
            for (offset, pair) in pairs.enumerated() {
                let lead = offset == 0 ? indent + "- " : childIndent
                emitEntry(prefix: lead + key(pair.key) + ":", value: pair.value, childIndent: childIndent + "  ", into: &lines)
            }
        case .list(let items) where !items.isEmpty:
            lines.append(indent + "-")
            for inner in items { emitListItem(inner, indent: childIndent, into: &lines) }
        default:
            lines.append(indent + "- " + item.inline(indent: childIndent))
        }
    }

    private static func emitEntry(prefix: String, value: ManifestValue, childIndent: String, into lines: inout [String]) {
        switch value {
        case .map(let pairs) where !pairs.isEmpty:
            lines.append(prefix)
            value.emit(into: &lines, indent: childIndent)
        case .list(let items) where !items.isEmpty:
            lines.append(prefix)
            // Sequences under a key sit at the key's own indentation plus two, like kubectl's output.
            value.emit(into: &lines, indent: childIndent)
        default:
            lines.append(prefix + " " + value.inline(indent: childIndent))
        }
    }

    /// Scalars and empty collections, which fit on the line that names them.
    private func inline(indent: String) -> String {
        switch self {
        case .string(let text): return YAMLScalarEmitter.scalar(text, indent: indent)
        case .int(let value): return String(value)
        case .bool(let value): return value ? "true" : "false"
        case .list: return "[]"
        case .map: return "{}"
        }
    }

    private static func key(_ text: String) -> String { YAMLScalarEmitter.scalar(text) }
}

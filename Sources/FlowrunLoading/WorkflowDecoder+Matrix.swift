import FlowrunYAML
import FlowrunModel

/// `matrix:` — a cross product of axes, with `exclude` and `include` as
/// GitHub Actions reads them (docs/FORMAT.md "Matrices and records").
///
/// 1. The cross product, the first axis varying slowest.
/// 2. Each `exclude` removes every combination that has all of its
///    key-value pairs. Its keys must be axes and its values among the
///    axis's values, and it must remove something: GitHub ignores an
///    exclude that matches nothing, which hides a typo (`macOS` for `macos`).
/// 3. Each `include`, in order: its pairs whose keys are axes select the
///    original combinations with those values; every selected combination
///    gets the include's other pairs (an earlier include's extra value may
///    be replaced, an axis value never is). When it selects none, it is a
///    combination of its own. An include that selects combinations and adds
///    nothing, or whose extra key is a near miss of an axis name (`pyton`
///    for `py`), is an error: both are typos that GitHub runs silently.
extension WorkflowDecoder {
    struct ExpandedMatrix {
        var axes: [String]
        var combinations: [FanOutItem]
    }

    private struct Axis {
        var name: String
        var values: [FanOutItem]
        var valueNodes: [YAMLNode]
    }

    /// A combination under construction: axis values first, then extras.
    private struct Combination {
        var fields: [FanOutField]
        var isOriginal: Bool

        func value(of key: String) -> FanOutItem? { fields.last { $0.key == key }?.value }
    }

    mutating func matrix(_ node: YAMLNode) -> ExpandedMatrix? {
        guard let pairs = mapping(node, what: "matrix") else { return nil }
        var axes: [Axis] = []
        var include: YAMLNode.Pair?
        var exclude: YAMLNode.Pair?
        for pair in pairs {
            guard let key = pair.key.scalar?.text else {
                error("keys of matrix must be plain strings, found \(pair.key.kindDescription)", at: pair.key)
                continue
            }
            switch key {
            case "include": include = pair
            case "exclude": exclude = pair
            default:
                guard Self.isFieldName(key) else {
                    error("'\(key)' cannot be an axis: a matrix axis is read as item.\(key), so use letters, digits, '_' and '-'", at: pair.key)
                    continue
                }
                guard let items = pair.value.sequence else {
                    error("matrix axis '\(key)' takes a list of values, found \(pair.value.kindDescription)", at: pair.value)
                    continue
                }
                guard !items.isEmpty else {
                    error("matrix axis '\(key)' has no values, so the matrix would have no combinations", at: pair.value)
                    continue
                }
                var axis = Axis(name: key, values: [], valueNodes: [])
                for item in items {
                    let value = itemValue(item)
                    if let first = axis.values.firstIndex(of: value) {
                        let mark = axis.valueNodes[first].mark
                        error("'\(value.displayText)' is listed twice in matrix axis '\(key)' (first at \(mark.line):\(mark.column))", at: item)
                        continue
                    }
                    axis.values.append(value)
                    axis.valueNodes.append(item)
                }
                axes.append(axis)
            }
        }
        if axes.isEmpty, include == nil {
            error("matrix has no axes: add at least one, like 'os: [linux, macos]', or an 'include:' list", at: node)
            return nil
        }

        // 1. The cross product, bounded before it is built.
        var count = axes.isEmpty ? 0 : 1
        for axis in axes {
            let product = count.multipliedReportingOverflow(by: axis.values.count)
            guard !product.overflow, product.partialValue <= NumericBounds.matrixCombinations else {
                error("the matrix has more than \(NumericBounds.matrixCombinations.grouped) combinations (\(axes.map { "\($0.values.count)" }.joined(separator: " × ")))", at: node)
                return nil
            }
            count = product.partialValue
        }
        var combinations: [Combination] = []
        combinations.reserveCapacity(count)
        if count > 0 {
            var odometer = [Int](repeating: 0, count: axes.count)
            for _ in 0..<count {
                combinations.append(Combination(
                    fields: axes.indices.map { FanOutField(key: axes[$0].name, value: axes[$0].values[odometer[$0]]) }, isOriginal: true))
                var digit = axes.count - 1
                while digit >= 0 {
                    odometer[digit] += 1
                    if odometer[digit] < axes[digit].values.count { break }
                    odometer[digit] = 0
                    digit -= 1
                }
            }
        }

        // Each exclude and include is matched against every combination: bound the work.
        let rules = (exclude?.value.sequence?.count ?? 0) + (include?.value.sequence?.count ?? 0)
        let work = rules.multipliedReportingOverflow(by: max(count, 1))
        guard !work.overflow, work.partialValue <= Self.matrixWorkLimit else {
            error("the matrix's \(rules) include and exclude entries against its \(count.grouped) combinations are too many to match (at most \(Self.matrixWorkLimit.grouped) pairs)", at: node)
            return nil
        }
        // 2. exclude
        if let exclude { applyExclude(exclude, axes: axes, to: &combinations) }
        // 3. include
        if let include { applyInclude(include, axes: axes, to: &combinations) }

        if combinations.isEmpty {
            error("the matrix has no combinations left: exclude removes every one", at: exclude?.key ?? node)
            return nil
        }
        return ExpandedMatrix(axes: axes.map(\.name), combinations: combinations.map { .record($0.fields) })
    }

    private mutating func applyExclude(_ pair: YAMLNode.Pair, axes: [Axis], to combinations: inout [Combination]) {
        guard let entries = pair.value.sequence else {
            error("exclude takes a list of mappings, like [{os: macos, py: \"3.11\"}], found \(pair.value.kindDescription)", at: pair.value)
            return
        }
        for entry in entries {
            guard let fields = entry.mapping else {
                error("each exclude is a mapping of axis values, like {os: macos}, found \(entry.kindDescription)", at: entry)
                continue
            }
            guard !fields.isEmpty else {
                error("an empty exclude would remove every combination", at: entry)
                continue
            }
            var conditions: [FanOutField] = []
            var valid = true
            for field in fields {
                let key = field.key.scalar?.text ?? ""
                guard let axis = axes.first(where: { $0.name == key }) else {
                    let names = axes.map(\.name)
                    error("exclude names '\(key)', which is not an axis of this matrix\(Suggestion.hint(for: key, in: names)); the axes are \(names.isEmpty ? "none" : names.joined(separator: ", "))", at: field.key)
                    valid = false
                    continue
                }
                let value = itemValue(field.value)
                guard axis.values.contains(value) else {
                    let texts = axis.values.map(\.displayText)
                    error("exclude: '\(value.displayText)' is not a value of axis '\(key)'\(Suggestion.hint(for: value.displayText, in: texts)); its values are \(texts.joined(separator: ", "))", at: field.value)
                    valid = false
                    continue
                }
                conditions.append(FanOutField(key: key, value: value))
            }
            guard valid else { continue }
            let before = combinations.count
            combinations.removeAll { combination in conditions.allSatisfy { combination.value(of: $0.key) == $0.value } }
            if combinations.count == before {
                error("this exclude matches no combination: an earlier exclude already removed every combination it names", at: entry)
            }
        }
    }

    private mutating func applyInclude(_ pair: YAMLNode.Pair, axes: [Axis], to combinations: inout [Combination]) {
        guard let entries = pair.value.sequence else {
            error("include takes a list of mappings, like [{os: linux, py: \"3.13\", experimental: true}], found \(pair.value.kindDescription)", at: pair.value)
            return
        }
        let axisNames = axes.map(\.name)
        for entry in entries {
            guard let pairs = entry.mapping, !pairs.isEmpty else {
                error("each include is a non-empty mapping, like {os: linux, experimental: true}, found \(entry.kindDescription)", at: entry)
                continue
            }
            var onAxes: [FanOutField] = []
            var extras: [FanOutField] = []
            var valid = true
            for field in pairs {
                let key = field.key.scalar?.text ?? ""
                guard Self.isFieldName(key) else {
                    error("'\(key)' cannot be a matrix key: it is read as item.\(key), so use letters, digits, '_' and '-'", at: field.key)
                    valid = false
                    continue
                }
                let value = itemValue(field.value)
                if axisNames.contains(key) {
                    onAxes.append(FanOutField(key: key, value: value))
                } else {
                    if let axis = Suggestion.nearest(to: key, in: axisNames) {
                        error("include adds the key '\(key)', which is not an axis (did you mean '\(axis)'?); keys that are not axes add a value to every combination the include matches", at: field.key)
                        valid = false
                        continue
                    }
                    extras.append(FanOutField(key: key, value: value))
                }
            }
            guard valid else { continue }
            var matched = 0
            for index in combinations.indices where combinations[index].isOriginal {
                guard onAxes.allSatisfy({ combinations[index].value(of: $0.key) == $0.value }) else { continue }
                matched += 1
                for extra in extras {
                    if let existing = combinations[index].fields.firstIndex(where: { $0.key == extra.key }) {
                        combinations[index].fields[existing].value = extra.value
                    } else {
                        combinations[index].fields.append(extra)
                    }
                }
            }
            if matched > 0 {
                if extras.isEmpty {
                    error("this include matches \(matched == 1 ? "a combination the matrix already has" : "\(matched) combinations the matrix already has") and adds nothing to \(matched == 1 ? "it" : "them")", at: entry)
                }
                continue
            }
            // Axis values first, in axis order, then the rest as written: names read alike.
            let ordered = axisNames.compactMap { name in onAxes.last { $0.key == name } }
            combinations.append(Combination(fields: ordered + extras, isOriginal: false))
        }
    }

    /// Include/exclude entries × combinations: a fraction of a second to match.
    static let matrixWorkLimit = 1_000_000

    /// Keys `item.KEY` can read: letters, digits, `_` and `-`.
    static func isFieldName(_ key: String) -> Bool {
        !key.isEmpty && key.unicodeScalars.allSatisfy {
            $0.isASCII && (("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
        }
    }
}

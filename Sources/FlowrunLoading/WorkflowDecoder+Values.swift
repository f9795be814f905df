import FlowrunYAML
import FlowrunModel

/// Reading typed values out of nodes, each failure a diagnostic at the node.
extension WorkflowDecoder {
    func location(_ node: YAMLNode) -> SourceLocation {
        SourceLocation(file: file, mark: node.mark)
    }

    mutating func error(_ message: String, at node: YAMLNode) {
        diagnostics.append(.error(message, at: location(node)))
    }

    mutating func error(_ message: String, at location: SourceLocation) {
        diagnostics.append(.error(message, at: location))
    }

    mutating func mapping(_ node: YAMLNode, what: String) -> [YAMLNode.Pair]? {
        guard let pairs = node.mapping else {
            error("expected a mapping for \(what), found \(node.kindDescription)", at: node)
            return nil
        }
        return pairs
    }

    /// A mapping's known keys, looked up by name. A handful per task, read a
    /// dozen times each: comparing short strings beats hashing them
    /// (hashing was a sixth of validating 20,000 tasks).
    struct Fields {
        private var entries: [(key: String, pair: YAMLNode.Pair)] = []

        subscript(key: String) -> YAMLNode.Pair? {
            get { entries.last { $0.key == key }?.pair }
            set {
                entries.removeAll { $0.key == key }
                if let newValue { entries.append((key, newValue)) }
            }
        }
    }

    /// The pairs of a mapping by key; unknown keys are reported with the nearest known one.
    mutating func fields(of node: YAMLNode, what: String, allowed: [String]) -> Fields? {
        guard let pairs = mapping(node, what: what) else { return nil }
        var fields = Fields()
        for pair in pairs {
            guard let key = pair.key.scalar?.text else {
                error("keys of \(what) must be plain strings, found \(pair.key.kindDescription)", at: pair.key)
                continue
            }
            guard allowed.contains(key) else {
                let hint = PeerWords.hint(for: key, value: pair.value, allowed: allowed) ?? Suggestion.hint(for: key, in: allowed)
                error("unknown key '\(key)' in \(what)\(hint)", at: pair.key)
                continue
            }
            fields[key] = pair
        }
        return fields
    }

    mutating func string(_ node: YAMLNode, what: String) -> String? {
        guard let scalar = node.scalar else {
            error("expected a string for \(what), found \(node.kindDescription)", at: node)
            return nil
        }
        return scalar.isNull ? "" : scalar.text
    }

    /// A whole number in `bounds` (see `NumericBounds`).
    mutating func int(_ node: YAMLNode, what: String, in bounds: ClosedRange<Int>) -> Int? {
        guard !holdsExpression(node, what: what) else { return nil }
        guard let value = node.scalar?.int, node.tag == nil || node.tag == "tag:yaml.org,2002:int" else {
            if let scalar = node.scalar, scalar.style == .plain, node.tag == nil, Self.isWholeNumberText(scalar.text) {
                // Too many digits for an Int: still a number, only too large.
                error("\(what) must be at most \(bounds.upperBound.grouped), found \(describe(node))", at: node)
            } else {
                error("expected a whole number for \(what), found \(describe(node))", at: node)
            }
            return nil
        }
        guard value >= bounds.lowerBound else {
            error("\(what) must be at least \(bounds.lowerBound.grouped), found \(value)", at: node)
            return nil
        }
        guard value <= bounds.upperBound else {
            error("\(what) must be at most \(bounds.upperBound.grouped), found \(value)", at: node)
            return nil
        }
        return value
    }

    private static func isWholeNumberText(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// A number in `bounds` (see `NumericBounds`).
    mutating func number(_ node: YAMLNode, what: String, in bounds: ClosedRange<Double>) -> Double? {
        guard !holdsExpression(node, what: what) else { return nil }
        guard let value = node.scalar?.double, value.isFinite else {
            error("expected a number for \(what), found \(describe(node))", at: node)
            return nil
        }
        guard value >= bounds.lowerBound else {
            error("\(what) must be at least \(bounds.lowerBound.formatted), found \(value.formatted)", at: node)
            return nil
        }
        guard value <= bounds.upperBound else {
            error("\(what) must be at most \(bounds.upperBound.formatted), found \(value.formatted)", at: node)
            return nil
        }
        return value
    }

    mutating func bool(_ node: YAMLNode, what: String) -> Bool? {
        guard !holdsExpression(node, what: what) else { return nil }
        guard let value = node.scalar?.bool else {
            error("expected true or false for \(what), found \(describe(node))", at: node)
            return nil
        }
        return value
    }

    mutating func duration(_ node: YAMLNode, what: String) -> Located<Duration>? {
        guard !holdsExpression(node, what: what) else { return nil }
        guard let scalar = node.scalar, !scalar.isNull else {
            error("expected a duration for \(what) (like 250ms, 30s, 2m, 1h30m or 1.5), found \(describe(node))", at: node)
            return nil
        }
        do throws(DurationSyntax.Problem) {
            return Located(try DurationSyntax.parse(scalar.text), at: location(node))
        } catch {
            self.error("\(error.message) in \(what)", at: node)
            return nil
        }
    }

    mutating func positiveDuration(_ node: YAMLNode, what: String) -> Located<Duration>? {
        guard let duration = duration(node, what: what) else { return nil }
        guard duration.value > .zero else {
            error("\(what) must be longer than 0", at: node)
            return nil
        }
        return duration
    }

    /// `needs: build` or `needs: [build, test]`.
    mutating func references(_ node: YAMLNode, what: String) -> [Reference] {
        oneOrList(node, expected: "a name or a list of names for \(what)").compactMap { item in
            guard let name = item.scalar?.text, !(item.scalar?.isNull ?? true) else {
                error("expected a name in \(what), found \(item.kindDescription)", at: item)
                return nil
            }
            guard !holdsExpression(item, what: what) else { return nil }
            return Reference(name, at: location(item))
        }
    }

    /// The items of `key: x` or `key: [x, y]` (none for `key: ~`); a mapping
    /// is an error saying what was `expected`.
    mutating func oneOrList(_ node: YAMLNode, expected: String) -> [YAMLNode] {
        switch node.content {
        case .scalar(let scalar) where scalar.isNull: return []
        case .scalar: return [node]
        case .sequence(let sequence): return sequence
        case .mapping:
            error("expected \(expected), found a mapping", at: node)
            return []
        }
    }

    /// A short rendering of a node for "found …" in messages.
    func describe(_ node: YAMLNode) -> String {
        guard let scalar = node.scalar else { return node.kindDescription }
        if scalar.isNull { return "nothing" }
        let text = scalar.text.count > 40 ? String(scalar.text.prefix(40)) + "…" : scalar.text
        return "'\(text)'"
    }

    /// A field read as written: a `${{ }}` in it is reported as such (SPEC
    /// §10), not as an unknown name or a malformed value further on.
    mutating func holdsExpression(_ node: YAMLNode, what: String) -> Bool {
        // A byte scan first: nearly every value has no '$' at all.
        guard let text = node.scalar?.text, text.utf8.contains(UInt8(ascii: "$")), text.contains("${{") else { return false }
        error("\(what) is read as written and does not evaluate ${{ }}; expressions work in run, env, cwd, http, if, foreach and a fan-out's name", at: node)
        return true
    }
}

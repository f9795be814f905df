/// What loading a YAML text produced: the documents and every problem found.
///
/// A problem that stops parsing (a syntax error, a budget or depth limit)
/// leaves no documents; problems found in a well-formed text (duplicate keys,
/// bad merges) come with the documents, so a validator can report them
/// together with its own.
///
/// An empty text, or one holding only comments, has no documents and no problems.
public struct YAMLLoadResult: Sendable {
    public var documents: [YAMLNode]
    /// Sorted by position.
    public var problems: [YAMLProblem]
}

/// Turns libyaml's event stream into `YAMLNode` trees, enforcing `YAMLLimits`.
///
/// Uses the event API, never `yaml_parser_load` (quadratic in anchors × aliases).
public struct YAMLLoader: Sendable {
    public var limits: YAMLLimits
    /// A workflow file holds one document; the conformance suite needs several.
    public var allowsMultipleDocuments: Bool

    public init(limits: YAMLLimits = YAMLLimits(), allowsMultipleDocuments: Bool = false) {
        self.limits = limits
        self.allowsMultipleDocuments = allowsMultipleDocuments
    }

    /// Loads a file, refusing it early when it is too large or not UTF-8.
    public func load(path: String) -> YAMLLoadResult {
        do {
            return load(bytes: try YAMLInput.read(path: path, limits: limits))
        } catch {
            return YAMLLoadResult(documents: [], problems: [error])
        }
    }

    public func load(bytes: [UInt8]) -> YAMLLoadResult {
        do throws(YAMLProblem) {
            if bytes.count > limits.maxBytes {
                throw YAMLInput.tooLarge(bytes.count, limits: limits)
            }
            try YAMLInput.checkUTF8(bytes)
            var builder = YAMLTreeBuilder(limits: limits)
            let parser = YAMLParser(bytes: bytes)
            var documents: [YAMLNode] = []
            while true {
                let event = try parser.next()
                if case .streamEnd = event { break }
                if case .documentStart(let mark) = event, !allowsMultipleDocuments, documents.count == 1 || builder.hasOpenDocument {
                    throw YAMLProblem("a workflow file holds one YAML document; a second one starts here", at: mark)
                }
                if let document = try builder.consume(event) { documents.append(document) }
            }
            return YAMLLoadResult(documents: documents, problems: builder.sortedProblems)
        } catch {
            return YAMLLoadResult(documents: [], problems: [error])
        }
    }
}

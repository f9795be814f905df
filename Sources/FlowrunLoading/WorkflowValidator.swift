package import FlowrunYAML
package import FlowrunModel

/// What validating a file produced: the workflow when it has no errors, and
/// every diagnostic (errors and warnings) sorted by position.
package struct ValidationResult: Sendable {
    package var workflow: Workflow?
    package var diagnostics: [Diagnostic]
    package var source: SourceText
}

/// The validation stage: file → YAML nodes → `Workflow`, collecting every problem.
package enum WorkflowValidator {
    package static func validate(path: String, limits: YAMLLimits = YAMLLimits(), includes: IncludeSettings = IncludeSettings()) -> ValidationResult {
        do {
            let bytes = try YAMLInput.read(path: path, limits: limits)
            return validate(bytes: bytes, file: path, limits: limits, includes: includes)
        } catch {
            let diagnostic = Diagnostic.error(error.message, at: SourceLocation(file: path, mark: error.mark))
            return ValidationResult(workflow: nil, diagnostics: [diagnostic], source: SourceText(file: path, bytes: []))
        }
    }

    package static func validate(bytes: [UInt8], file: String, limits: YAMLLimits = YAMLLimits(), includes: IncludeSettings = IncludeSettings()) -> ValidationResult {
        // libyaml counts a UTF-8 byte order mark as a column; without it line 1's columns are right.
        let bytes = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        let source = SourceText(file: file, bytes: bytes)
        // The document tree is gone once decoded (its own function's
        // locals): the checks that follow read the workflow only, and at
        // 20,000 tasks the tree was 3.8 MB of their peak.
        let decoded = decode(bytes: bytes, file: file, source: source, limits: limits, includes: includes)
        var diagnostics = decoded.diagnostics
        guard let workflow = decoded.workflow, let names = decoded.names else {
            return ValidationResult(workflow: nil, diagnostics: diagnostics.sortedByPosition(), source: source)
        }
        var checker = WorkflowChecker(workflow: workflow, names: names, reportsMissingTasks: !decoded.decoderHadErrors)
        diagnostics += checker.check()
        diagnostics = capped(diagnostics.sortedByPosition(), file: file)
        return ValidationResult(workflow: diagnostics.hasErrors ? nil : workflow, diagnostics: diagnostics, source: source)
    }

    /// The file's tree, decoded into a workflow: nil workflow when there is
    /// no document, or an empty one (`diagnostics` say which).
    private static func decode(bytes: [UInt8], file: String, source: SourceText, limits: YAMLLimits, includes: IncludeSettings) -> Decoded {
        let loaded = YAMLLoader(limits: limits).load(bytes: bytes)
        var diagnostics = loaded.problems.map { Diagnostic.error($0.message, at: SourceLocation(file: file, mark: $0.mark)) }
        guard let root = loaded.documents.first else {
            if diagnostics.isEmpty {
                diagnostics.append(.error("the file is empty: a workflow needs at least one task under 'tasks:'", at: SourceLocation(file: file, line: 1, column: 1)))
            }
            return Decoded(diagnostics: diagnostics)
        }
        if case .scalar(let scalar) = root.content, scalar.isNull {
            diagnostics.append(.error("the file has no workflow in it: a workflow needs at least one task under 'tasks:'", at: SourceLocation(file: file, line: 1, column: 1)))
            return Decoded(diagnostics: diagnostics)
        }
        var names = NameTable(root: root)
        var decoder = WorkflowDecoder(file: file, source: source, names: names)
        decoder.isIncluded = !includes.chain.isEmpty
        var workflow = decoder.decode(root, defaultName: defaultName(for: file))
        diagnostics += decoder.diagnostics
        var hadErrors = decoder.diagnostics.hasErrors
        if !decoder.includes.isEmpty {
            let merged = merge(decoder.includes, into: &workflow, names: &names, file: file, limits: limits, settings: includes)
            diagnostics += merged
            hadErrors = hadErrors || merged.hasErrors
        }
        return Decoded(diagnostics: diagnostics, workflow: workflow, names: names, decoderHadErrors: hadErrors)
    }

    private struct Decoded {
        var diagnostics: [Diagnostic]
        var workflow: Workflow?
        var names: NameTable?
        var decoderHadErrors = false
    }

    /// At most `maxDiagnostics` are reported; a file with thousands of
    /// mistakes gets the first ones and a count of the rest.
    static let maxDiagnostics = 200

    private static func capped(_ diagnostics: [Diagnostic], file: String) -> [Diagnostic] {
        guard diagnostics.count > maxDiagnostics else { return diagnostics }
        let shown = Array(diagnostics.prefix(maxDiagnostics))
        let rest = diagnostics.count - maxDiagnostics
        let location = diagnostics[maxDiagnostics].location
        return shown + [.error("\(rest) more problem\(rest == 1 ? "" : "s") not shown; fix these first", at: location)]
    }

    /// `workflows/nightly-sync.yaml` → `nightly-sync`.
    static func defaultName(for file: String) -> String {
        let base = file.split(separator: "/").last.map(String.init) ?? file
        for suffix in [".yaml", ".yml"] where base.hasSuffix(suffix) && base.count > suffix.count {
            return String(base.dropLast(suffix.count))
        }
        return base
    }
}

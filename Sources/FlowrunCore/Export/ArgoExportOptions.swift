/// What `flowrun export --to argo` was asked for.
public struct ArgoExportOptions: Sendable {
    /// The container image of every script template.
    public var image = "alpine:3"
    /// `metadata.namespace` of every emitted resource; nil leaves it to kubectl.
    public var namespace: String?
    /// Emit a `WorkflowTemplate` (fixed name, submitted with `argo submit --from`)
    /// instead of a `Workflow` (`generateName`).
    public var asTemplate = false
    /// Every emulation becomes an error: the manifest must mean exactly what the file says.
    public var strict = false

    public init() {}
}

/// The manifest text, or the diagnostics that stopped it.
public struct ArgoExportResult: Sendable {
    /// Multi-document YAML; nil when any diagnostic is an error.
    public var manifest: String?
    /// Emulations (warnings, or errors with `--strict`) and refusals (errors), sorted by position.
    public var diagnostics: [Diagnostic]
    /// The documents before they became text (for tests and tools).
    public var documents: [ManifestValue]
}

/// Collects what the export could not say natively: each emulation and each
/// refusal blames the line that asked for it.
struct ArgoExportProblems {
    let strict: Bool
    private(set) var diagnostics: [Diagnostic] = []

    init(strict: Bool) {
        self.strict = strict
    }

    /// A documented construction stands in for a flowrun feature; an error under `--strict`.
    mutating func emulate(_ message: String, at location: SourceLocation) {
        if strict {
            diagnostics.append(.error("--strict: \(message)", at: location))
        } else {
            diagnostics.append(.warning("emulated on Argo: \(message)", at: location))
        }
    }

    /// Argo cannot express this at all, so nothing is written.
    mutating func refuse(_ message: String, at location: SourceLocation) {
        diagnostics.append(.error("cannot export to Argo: \(message)", at: location))
    }
}

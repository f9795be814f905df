package import FlowrunModel

/// What `flowrun export --to argo` was asked for.
package struct ArgoExportOptions: Sendable {
    /// The container image of every script template.
    package var image = "alpine:3"
    /// `metadata.namespace` of every emitted resource; nil leaves it to kubectl.
    package var namespace: String?
    /// Emit a `WorkflowTemplate` (fixed name, submitted with `argo submit --from`)
    /// instead of a `Workflow` (`generateName`).
    package var asTemplate = false
    /// Every emulation becomes an error: the manifest must mean exactly what the file says.
    package var strict = false

    package init() {}
}

/// The manifest text, or the diagnostics that stopped it.
package struct ArgoExportResult: Sendable {
    /// Multi-document YAML; nil when any diagnostic is an error.
    package var manifest: String?
    /// Emulations (warnings, or errors with `--strict`) and refusals (errors), sorted by position.
    package var diagnostics: [Diagnostic]
    /// The documents before they became text (for tests and tools).
    package var documents: [ManifestValue]
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

    /// Something the user must do on the cluster; a warning under `--strict` too.
    mutating func note(_ message: String, at location: SourceLocation) {
        diagnostics.append(.warning(message, at: location))
    }

    /// Argo cannot express this at all, so nothing is written.
    mutating func refuse(_ message: String, at location: SourceLocation) {
        diagnostics.append(.error("cannot export to Argo: \(message)", at: location))
    }
}

package import FlowrunModel
import FlowrunLoading
package import Testing

/// Validates YAML text as the file `test.yaml` and returns every diagnostic as printed.
package func diagnostics(_ yaml: String) -> [String] {
    WorkflowValidator.validate(bytes: Array(yaml.utf8), file: "test.yaml").diagnostics.map(\.description)
}

/// Validates YAML text that must be valid, returning the workflow.
package func workflow(_ yaml: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> Workflow {
    let result = WorkflowValidator.validate(bytes: Array(yaml.utf8), file: "test.yaml")
    #expect(!result.diagnostics.hasErrors, "\(result.diagnostics)", sourceLocation: sourceLocation)
    return try #require(result.workflow, sourceLocation: sourceLocation)
}

/// Text with position markers `¹`…`⁹` taken out, and where each marker stood
/// (line:column), so tests name positions instead of counting columns.
package struct MarkedText {
    package var text: String
    package var positions: [Int: String] = [:]

    package init(_ marked: String) {
        let markers: [Character: Int] = ["¹": 1, "²": 2, "³": 3, "⁴": 4, "⁵": 5, "⁶": 6, "⁷": 7, "⁸": 8, "⁹": 9]
        var text = ""
        var line = 1
        var column = 1
        for character in marked {
            if let number = markers[character] {
                positions[number] = "test.yaml:\(line):\(column)"
                continue
            }
            text.append(character)
            if character == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        self.text = text
    }

    package subscript(marker: Int) -> String { positions[marker] ?? "no marker \(marker)" }
}

/// Validates the workflow file at `path` (includes resolved beside it);
/// nil when it has an error.
package func workflow(atPath path: String) -> Workflow? {
    let result = WorkflowValidator.validate(path: path)
    return result.diagnostics.hasErrors ? nil : result.workflow
}

/// Validates YAML text as the file `test.yaml`: the workflow (nil on an
/// error) and every diagnostic as printed, for a failure message.
package func validated(_ yaml: String) -> (workflow: Workflow?, diagnostics: [String]) {
    let result = WorkflowValidator.validate(bytes: Array(yaml.utf8), file: "test.yaml")
    return (result.diagnostics.hasErrors ? nil : result.workflow, result.diagnostics.map(\.description))
}

package import FlowrunModel
package import FlowrunYAML

// Here, not beside SourceLocation: the model knows nothing of YAML.
extension SourceLocation {
    package init(file: String, mark: Mark) {
        self.init(file: file, line: mark.line, column: mark.column)
    }
}

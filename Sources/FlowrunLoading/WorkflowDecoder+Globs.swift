import FlowrunYAML
import FlowrunModel

/// `sources:` and `generates:`: a glob or a list of globs, each a template
/// (a fan-out member may name its own file: `sources: ["${{ item }}"]`).
extension WorkflowDecoder {
    static let incrementalKeys = ["sources", "generates"]

    mutating func globs(_ node: YAMLNode, what: String) -> [Template] {
        oneOrList(node, expected: "a glob or a list of globs for \(what)").compactMap { item in
            guard let scalar = item.scalar, !scalar.isNull else {
                error("expected a glob (a string) in \(what), found \(item.kindDescription)", at: item)
                return nil
            }
            let parsed = template(scalar.text, node: item)
            checkGlob(parsed, scalar: scalar, node: item, what: what)
            return parsed
        }
    }

    /// A literal glob is checked whole, with the column of the problem; one
    /// with `${{ }}` is checked with each value standing in as a name (and
    /// checked again once filled in, at run time).
    private mutating func checkGlob(_ template: Template, scalar: YAMLScalar, node: YAMLNode, what: String) {
        var text = ""
        var literal = true
        for segment in template.segments {
            switch segment {
            case .text(let part): text += part
            case .expression:
                text += "x"
                literal = false
            }
        }
        do throws(GlobPattern.Problem) {
            _ = try GlobPattern.parse(text)
        } catch {
            var at = location(node)
            // The column of the problem, where the text is the node's one line as written.
            if literal, !scalar.text.contains("\n"), scalar.style != .literal, scalar.style != .folded {
                let shift = scalar.style == .singleQuoted || scalar.style == .doubleQuoted ? 1 : 0
                at = SourceLocation(file: at.file, line: at.line, column: at.column + shift + String(decoding: text.utf8.prefix(error.offset), as: UTF8.self).count)
            }
            self.error("bad glob in \(what): \(error.message)", at: at)
        }
    }
}

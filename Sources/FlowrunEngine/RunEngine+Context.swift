import FlowrunModel
import FlowrunValues

/// Expressions at run time: what a task's `if:`, templates and a group's
/// `foreach` read, through the `ExpressionContext` the evaluator asks.
extension RunEngine {
    /// The values one task (or a group's `foreach`) sees.
    struct NodeContext: ExpressionContext {
        let engine: RunEngine
        let item: FanOutItem?
        let index: Int?

        func value(of path: OperandPath) -> ExpressionValue? {
            engine.operandValue(path, item: item, index: index)
        }

        func byteCount(of path: OperandPath) -> Int? {
            engine.wholeByteCount(path)
        }
    }

    func context(for node: Int?) -> NodeContext {
        NodeContext(engine: self, item: node.flatMap { nodes[$0].item }, index: node.flatMap { nodes[$0].index })
    }

    /// A template inserted as text (env, cwd, http, names, foreach).
    func renderText(_ template: Template, for node: Int?, item: FanOutItem? = nil, index: Int? = nil) throws(TemplateRenderError) -> String {
        let context = NodeContext(engine: self, item: item ?? node.flatMap { nodes[$0].item }, index: index ?? node.flatMap { nodes[$0].index })
        return try TemplateRenderer.render(template, mode: .text, in: context)
    }

    func renderShell(_ template: Template, for node: Int) throws(TemplateRenderError) -> String {
        let launch = ScriptLaunch.of(shell: nodes[node].definition?.value.shell, script: template.source)
        return try TemplateRenderer.render(template, mode: TemplateRenderer.scriptMode(launch), in: context(for: node))
    }
}

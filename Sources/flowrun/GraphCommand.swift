import ArgumentParser
import FlowrunReporting

/// `flowrun graph [FILE] [--format dot|mermaid]`
struct GraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Print the workflow's graph as Graphviz DOT or a Mermaid flowchart.",
        discussion: """
            Groups are clusters, a fan-out is one node with its member count (or *), joins are \
            diamonds with their need and deadline, semaphores are noted on tasks. For a picture: \
            flowrun graph FILE | dot -Tpng -o graph.png
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case dot, mermaid
    }

    @Argument(help: "The workflow file (default: ./flowrun.yaml or ./flowrun.yml, else the nearest parent folder's).", completion: .file(extensions: ["yaml", "yml"]))
    var file: String?

    @Option(help: "dot (Graphviz) or mermaid.")
    var format: Format = .dot

    func run() throws {
        let plan = try PlanLoader.load(WorkflowFileLookup.resolve(file)).plan
        Terminal.standardOutput.write(PlanGraph.render(plan, as: format == .dot ? .dot : .mermaid))
    }
}

import ArgumentParser

/// `flowrun list [FILE] [--output text|json]`
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List what a workflow can run: its tasks, fan-outs, groups, joins and finally tasks, with their descriptions.",
        discussion: """
            In plan order, one line each: name, kind, description, and where it sits (a member's group, a \
            group's members, what a join waits for). --output json prints an array of \
            {name, kind, description, group?} (docs/FORMAT.md).
            """
    )

    enum Output: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: "The workflow file (default: ./flowrun.yaml or ./flowrun.yml, else the nearest parent folder's).", completion: .file(extensions: ["yaml", "yml"]))
    var file: String?

    @Option(help: "text: aligned columns for a terminal; json: an array of {name, kind, description, group?}.")
    var output: Output = .text

    func run() throws {
        try Self.list(file, output: output)
    }

    /// The listing, from plain values (argument-parser's, or `FastCommandLine`'s).
    static func list(_ file: String?, output: Output) throws {
        let plan = try PlanLoader.load(WorkflowFileLookup.resolve(file)).plan
        Terminal.standardOutput.write(output == .json ? plan.listJSON : plan.listText)
    }
}

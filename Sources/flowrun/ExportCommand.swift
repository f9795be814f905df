import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunRecord
import FlowrunExport
import FlowrunPlanning

/// `flowrun export FILE --to argo [--image IMAGE] [--namespace NS] [--template] [--strict] [-o OUT]`
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Compile a workflow into an Argo Workflows manifest, to run it on a Kubernetes cluster.",
        discussion: """
            Writes a multi-document YAML: an argoproj.io/v1alpha1 Workflow (or WorkflowTemplate) and, when the \
            workflow declares semaphores, a ConfigMap with their capacities. What Argo cannot express exactly is \
            emulated and reported as a warning (an error with --strict), or refused with an error at the line \
            that asks for it; nothing is dropped silently. Exits 0 when written, 2 when refused. \
            Submit it with `kubectl create -f OUT` (docs/CLUSTER.md).
            """
    )

    enum Target: String, ExpressibleByArgument, CaseIterable {
        case argo
    }

    @Argument(help: "The workflow file.", completion: .file(extensions: ["yaml", "yml"]))
    var file: String

    @Option(help: "The engine to compile for (argo: Argo Workflows v3.6 or later).")
    var to: Target

    @Option(help: ArgumentHelp("The container image every script task runs in; it needs /bin/sh and awk.", valueName: "image"))
    var image: String = "alpine:3"

    @Option(help: ArgumentHelp("metadata.namespace of the Workflow and the ConfigMap (default: kubectl's current namespace).", valueName: "namespace"))
    var namespace: String?

    @Flag(help: "Emit a WorkflowTemplate with a fixed name instead of a Workflow (submit with `argo submit --from workflowtemplate/NAME`).")
    var template = false

    @Flag(help: "Refuse every emulation: fail unless Argo can express the workflow exactly.")
    var strict = false

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Write the manifest to this file instead of stdout.", valueName: "file"))
    var output: String?

    func run() throws {
        var planOptions = PlanOptions()
        planOptions.sizesFanOutsOverVars = false  // `vars` stay Argo parameters, read when submitted
        planOptions.fillsArguments = false  // `${{ args }}` reaches the compiler: a workflow parameter, with a warning
        let (plan, source) = try PlanLoader.load(file, options: planOptions)
        var options = ArgoExportOptions()
        options.image = image
        options.namespace = namespace
        options.asTemplate = template
        options.strict = strict
        let export = ArgoExport.export(plan, options: options)
        Terminal.report(export.diagnostics, source: source)
        guard let manifest = export.manifest else { throw ExitCode(2) }
        if let output {
            do {
                try SafeFileWriter.write(manifest, to: output)
            } catch {
                Terminal.standardError.write("flowrun: \(error)\n")
                throw ExitCode(1)
            }
        } else {
            Terminal.standardOutput.write(manifest)
        }
    }
}

import Foundation
import Testing

/// `flowrun graph`: the DOT of every recipe renders with Graphviz (proof that
/// it is valid), and the Mermaid flowchart only links nodes it defines.
@Suite struct GraphTests {
    static let dot = ["/usr/bin/dot", "/usr/local/bin/dot"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(arguments: WorkflowsTests.files)
    func dotRendersToPNGWithGraphviz(_ file: String) throws {
        let run = try FlowrunBinary.run(["graph", file, "--format", "dot"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.hasPrefix("digraph "), "\(run)")
        guard let dot = Self.dot else {
            Issue.record("Graphviz `dot` is not installed (apt-get install graphviz; .ci/run installs it)")
            return
        }
        let directory = try TemporaryDirectory()
        let source = try directory.write(run.stdout, to: "graph.dot")
        let picture = directory.path + "/graph.png"
        let render = Process()
        render.executableURL = URL(fileURLWithPath: dot)
        render.arguments = ["-Tpng", source, "-o", picture]
        let errors = Pipe()
        render.standardError = errors
        try render.run()
        render.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(render.terminationStatus == 0, "dot rejected the graph of \(file): \(message)")
        let size = (try? FileManager.default.attributesOfItem(atPath: picture)[.size] as? Int) ?? 0
        #expect(size > 1000, "no picture was drawn for \(file)")
    }

    @Test(arguments: WorkflowsTests.files)
    func mermaidLinksOnlyDefinedNodes(_ file: String) throws {
        let run = try FlowrunBinary.run(["graph", file, "--format", "mermaid"])
        run.expectNoCrash()
        #expect(run.exitStatus == 0, "\(run)")
        let lines = run.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.first == "flowchart LR")
        var defined = Set<String>()
        var linked: [(String, String)] = []
        for line in lines.dropFirst() {
            let words = line.split(separator: " ")
            if words.count == 3, words[1] == "-->" || words[1] == "-.->" {
                linked.append((String(words[0]), String(words[2])))
            } else if let id = line.split(whereSeparator: { "([{/".contains($0) }).first, line.first == "n" {
                defined.insert(String(id))
            }
        }
        #expect(!linked.isEmpty, "\(run.stdout)")
        for (from, to) in linked {
            #expect(defined.contains(from) && defined.contains(to), "edge \(from) --> \(to) uses an undefined node\n\(run.stdout)")
        }
    }

    @Test func groupsAreClustersFanOutsShowTheirCountAndJoinsAreDiamonds() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("""
            semaphores: {db: 2}
            tasks:
              list: {run: ls}
            groups:
              each:
                needs: list
                concurrency: 3
                foreach: ${{ tasks.list.stdout }}
                task: {run: "echo ${{ item }}", semaphores: {db: 2}}
              fixed:
                foreach: [a, b]
                task: {sleep: 1s}
            joins:
              both: {wait: [each, fixed], need: 1, timeout: 5s}
            """, to: "graph.yaml")
        let run = try FlowrunBinary.run(["graph", file])
        #expect(run.exitStatus == 0, "\(run)")
        #expect(run.stdout.contains("subgraph \"cluster_each\""), "\(run.stdout)")
        #expect(run.stdout.contains("\"each[*]\" [shape=box3d, style=solid, label=\"each[*] × *\\n⚑ db 2/2\"]"), "\(run.stdout)")
        #expect(run.stdout.contains("label=\"fixed[*] × 2\\nsleep 1s\""), "\(run.stdout)")
        #expect(run.stdout.contains("\"both\" [shape=diamond, style=solid, label=\"both\\nneed 1 of 2\\ndeadline 5s, then continue\"]"), "\(run.stdout)")
        #expect(run.stdout.contains("\"list\" -> \"each[*]\";"), "\(run.stdout)")
    }
}

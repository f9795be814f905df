import Foundation
import Testing

/// `./install.sh` (issue 19.4). Installing builds a static release binary,
/// minutes of work, so the test of an installed tree runs where `.ci/run`
/// installed one and says so (`FLOWRUN_INSTALLED_PREFIX`); elsewhere Swift
/// Testing reports it skipped with the reason below, never passed.
@Suite struct InstallTests {
    static let installedPrefix = ProcessInfo.processInfo.environment["FLOWRUN_INSTALLED_PREFIX"]
    static let installScript = WorkflowSchemaTests.package.appendingPathComponent("install.sh").path

    static func shell(_ executable: String, _ arguments: [String], environment: [String] = ["PATH=/usr/bin:/bin"],
                      directory: String? = nil) throws -> (status: Int32?, stdout: String, stderr: String) {
        let scratch = try TemporaryDirectory(prefix: "flowrun-install")
        let outcome = try ChildProcess.run(
            executable: executable, arguments: arguments, environment: environment, directory: directory,
            stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err", timeout: .seconds(60), launcher: nil)
        return (outcome.exitStatus,
                (try? String(contentsOfFile: scratch.path + "/out", encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: scratch.path + "/err", encoding: .utf8)) ?? "")
    }

    @Test func theInstallScriptRefusesWhatItDoesNotKnowBeforeBuilding() throws {
        let bash = try RunSandbox.tool("bash")
        let unknown = try Self.shell(bash, [Self.installScript, "--prefx", "/tmp/x"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown argument '--prefx'"), "\(unknown)")
        let empty = try Self.shell(bash, [Self.installScript, "--prefix", ""])
        #expect(empty.status == 2 && empty.stderr.contains("--prefix needs a folder"), "\(empty)")
        let help = try Self.shell(bash, [Self.installScript, "--help"])
        #expect(help.status == 0 && help.stdout.contains("./install.sh --prefix DIR"), "\(help)")
    }

    @Test(.enabled(if: installedPrefix != nil,
                   "needs an installed tree: .ci/run runs ./install.sh --prefix DIR and sets FLOWRUN_INSTALLED_PREFIX=DIR"))
    func theInstalledBinaryIsStaticAndEverythingElseIsInPlace() throws {
        let prefix = try #require(Self.installedPrefix)
        let binary = prefix + "/bin/flowrun"
        let ldd = try Self.shell(try RunSandbox.tool("ldd"), [binary])
        #expect(ldd.status == 0, "\(ldd)")
        let swiftLibraries = ldd.stdout.split(separator: "\n").filter {
            $0.contains("libswift") || $0.contains("libFoundation") || $0.contains("libdispatch") || $0.contains("libBlocksRuntime")
        }
        #expect(swiftLibraries.isEmpty, "the installed binary needs Swift's libraries: \(swiftLibraries)")
        // Linked in by install.sh: loading them was a sixth of `--version`'s CPU.
        let cxxLibraries = ldd.stdout.split(separator: "\n").filter { $0.contains("libstdc++") || $0.contains("libgcc_s") }
        #expect(cxxLibraries.isEmpty, "the installed binary loads libstdc++/libgcc_s: \(cxxLibraries)")
        // libyaml linked in too (CI installs libyaml-dev, which has the archive).
        #expect(!ldd.stdout.contains("libyaml"), "the installed binary loads libyaml: \(ldd.stdout)")
        // No symbol exported: the runtime's dladdr at every start walked 5,663 of them.
        let symbols = try Self.shell(try RunSandbox.tool("readelf"), ["--dyn-syms", "-W", binary])
        let exported = symbols.stdout.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count >= 8 && fields[0].hasSuffix(":") && fields[6] != "UND" && fields[4] != "LOCAL"
        }
        #expect(symbols.status == 0 && exported.count <= 8, "the installed binary exports \(exported.count) symbols: \(exported.prefix(10))")
        // No RUNPATH: the loader would search folders beside the binary for each library at every start.
        let dynamic = try Self.shell(try RunSandbox.tool("readelf"), ["-d", binary])
        #expect(dynamic.status == 0 && !dynamic.stdout.contains("RUNPATH") && !dynamic.stdout.contains("RPATH"), "\(dynamic.stdout)")

        // Runs with nothing of the toolchain reachable: an empty environment,
        // LD_LIBRARY_PATH empty, PATH without /opt/swift.
        let version = try Self.shell(binary, ["--version"], environment: ["PATH=/usr/bin:/bin", "LD_LIBRARY_PATH="])
        #expect(version.status == 0, "\(version)")
        #expect(version.stdout.hasPrefix("0."), "\(version)")
        if let git = try? RunSandbox.tool("git") {
            let head = try Self.shell(git, ["rev-parse", "--short=12", "HEAD"], directory: WorkflowSchemaTests.package.path)
            if head.status == 0 {
                let commit = head.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(version.stdout.contains("(commit \(commit)"), "--version should name HEAD \(commit): \(version.stdout)")
            }
        } else {
            #expect(!version.stdout.contains("unknown"), "\(version)")
        }

        let files = [
            "share/man/man1/flowrun.1", "share/bash-completion/completions/flowrun",
            "share/zsh/site-functions/_flowrun", "share/fish/vendor_completions.d/flowrun.fish",
            "share/flowrun/flowrun.schema.json",
        ]
        for file in files {
            #expect(FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file) is not installed under \(prefix)")
        }
        let man = try Self.shell(try RunSandbox.tool("man"), ["-l", prefix + "/share/man/man1/flowrun.1"],
                                 environment: ["PATH=/usr/bin:/bin", "MANPAGER=cat", "PAGER=cat", "MANWIDTH=80"])
        #expect(man.status == 0 && man.stdout.contains("FLOWRUN(1)"), "\(man)")
        let bashScript = try String(contentsOfFile: prefix + "/share/bash-completion/completions/flowrun", encoding: .utf8)
        #expect(bashScript.contains("_flowrun_run") && bashScript.contains("default subcommand is run"))
    }

    /// scripts/startup-order.sh run from a copy whose path has a space, the
    /// binary named relatively (this build's): it writes the list into that
    /// copy, every line a section the linker can know, `.text.` and a name
    /// as the object file spells it, the Swift runtime's C++ functions mangled
    /// (`.text._ZN5swift…`); demangled (`.text.swift::initializeProtocolLookup()`)
    /// they matched no section, and gold laid them out unordered.
    @Test func theStartupOrderScriptListsSectionsTheLinkerCanFind() throws {
        let scratch = try TemporaryDirectory(prefix: "flowrun-startup-order")
        let copy = scratch.path + "/a copy"
        let package = WorkflowSchemaTests.package.path
        for folder in ["scripts", "workflows"] {
            try FileManager.default.createDirectory(atPath: copy + "/" + folder, withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(atPath: package + "/scripts/startup-order.sh", toPath: copy + "/scripts/startup-order.sh")
        try FileManager.default.copyItem(atPath: package + "/workflows/c-project", toPath: copy + "/workflows/c-project")
        let binary = try FlowrunBinary.path()
        let folder = (binary as NSString).deletingLastPathComponent
        let outcome = try ChildProcess.run(
            executable: try RunSandbox.tool("bash"), arguments: [copy + "/scripts/startup-order.sh", "./" + (binary as NSString).lastPathComponent],
            environment: ["PATH=/usr/bin:/bin", "HOME=\(scratch.path)"], directory: folder,
            stdoutPath: scratch.path + "/out", stderrPath: scratch.path + "/err", timeout: .seconds(600), launcher: nil)
        let stderr = (try? String(contentsOfFile: scratch.path + "/err", encoding: .utf8)) ?? ""
        #expect(!outcome.timedOut)
        #expect(outcome.exitStatus == 0, "\(stderr)")
        let list = try String(contentsOfFile: copy + "/scripts/startup-order.txt", encoding: .utf8).split(separator: "\n")
        #expect(list.count > 1000, "\(list.count) functions listed")
        let unlike = list.filter { $0.wholeMatch(of: /\.text\.[A-Za-z0-9_$.@]+/) == nil }
        #expect(unlike.isEmpty, "\(unlike.count) lines name no section, e.g. \(unlike.prefix(3))")
        #expect(list.contains { $0.hasPrefix(".text._ZN5swift") }, "the Swift runtime's C++ functions are missing")
        #expect(list.contains { $0.hasPrefix(".text.$s7flowrun") || $0.contains("Flowrun") }, "flowrun's own functions are missing")
    }

    /// install.sh lays out the functions flowrun's everyday commands run
    /// together (scripts/startup-order.txt, one section a function): flowrun's
    /// own functions of the list lie in few 64 KiB windows of `.text`, each a
    /// page fault at most (58 windows unordered, 19 ordered when measured).
    @Test(.enabled(if: installedPrefix != nil,
                   "needs an installed tree: .ci/run runs ./install.sh --prefix DIR and sets FLOWRUN_INSTALLED_PREFIX=DIR"))
    func theFunctionsEverydayCommandsRunLieTogether() throws {
        let prefix = try #require(Self.installedPrefix)
        let list = try String(contentsOf: WorkflowSchemaTests.package.appendingPathComponent("scripts/startup-order.txt"), encoding: .utf8)
        let ours = Set(list.split(separator: "\n").map { $0.dropFirst(".text.".count) }
            .filter { $0.hasPrefix("$s") && ($0.contains("Flowrun") || $0.hasPrefix("$s7flowrun")) }.map(String.init))
        let nm = try Self.shell(try RunSandbox.tool("nm"), [prefix + "/bin/flowrun"])
        #expect(nm.status == 0, "\(nm.stderr)")
        var windows = Set<UInt64>()
        var found = Set<String>()  // a name nm lists twice (a local symbol of two objects) counts once
        for line in nm.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, "tT".contains(fields[1]), ours.contains(String(fields[2])),
                  let address = UInt64(fields[0], radix: 16) else { continue }
            found.insert(String(fields[2]))
            windows.insert(address >> 16)
        }
        #expect(found.count * 2 >= ours.count,
                "only \(found.count) of the list's \(ours.count) functions are in the binary: regenerate it (scripts/startup-order.sh)")
        #expect(windows.count <= 24, "flowrun's start-up functions span \(windows.count) windows of 64 KiB (ordered: 19, unordered: 58)")
    }
}

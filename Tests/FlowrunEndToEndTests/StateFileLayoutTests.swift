import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RunEndToEndParallel {
    /// `.flowrun/state` files are read straight from their bytes when they
    /// are in the writer's own shape (`StateFileScanner`), by the general
    /// JSON reader otherwise. Both must find the same record: a state file
    /// laid out by another writer (spaces, keys in another order, `\/`
    /// escapes), and one whose source's name needs an escape, keep
    /// their tasks up to date, run after run, with the real binary.
    @Suite struct StateFileLayoutTests {
        static let workflow = """
            tasks:
              plain:
                sources: [a.c, "include/*.h"]
                run: echo ran >> "$SANDBOX/plain.count"
              odd:
                sources: ['qu"ote é.c', "include/*.h"]
                run: echo ran >> "$SANDBOX/odd.count"

            """

        /// Every state file rewritten by Foundation's JSON writer: sorted keys, pretty-printed, `/` as `\/`.
        func relayOut(_ folder: String) throws -> Int {
            let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }
            for name in names {
                let path = folder + "/" + name
                let object = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: path)))
                let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
                #expect(data.contains(UInt8(ascii: "\n")) && String(decoding: data, as: UTF8.self).contains("\\/"))
                try data.write(to: URL(fileURLWithPath: path))
                chmod(path, 0o600)
            }
            return names.count
        }

        @Test func stateFilesInAnotherLayoutOrWithEscapesKeepTasksUpToDate() throws {
            let sandbox = try RunSandbox()
            try FileManager.default.createDirectory(atPath: sandbox.file("include"), withIntermediateDirectories: true)
            for (name, text) in [("a.c", "int a;\n"), ("qu\"ote é.c", "int q;\n"), ("include/x.h", "#define X\n"), ("include/y.h", "#define Y\n")] {
                try text.write(toFile: sandbox.file(name), atomically: false, encoding: .utf8)
            }
            #expect(try sandbox.run(Self.workflow).exitStatus == 0)
            #expect(sandbox.lines("plain.count").count == 1 && sandbox.lines("odd.count").count == 1)
            // The writer's shape (and, for the odd task, escapes): nothing runs.
            #expect(try sandbox.run(Self.workflow).exitStatus == 0)
            #expect(sandbox.lines("plain.count").count == 1 && sandbox.lines("odd.count").count == 1, "a task ran again though nothing changed")
            // Another writer's layout: still up to date, twice (the first may write its stamps back).
            #expect(try relayOut(sandbox.file(".flowrun/state")) == 2)
            for _ in 0..<2 {
                #expect(try sandbox.run(Self.workflow).exitStatus == 0)
                #expect(sandbox.lines("plain.count").count == 1 && sandbox.lines("odd.count").count == 1, "a state file in another layout was not read")
            }
            // And a change is still seen through it.
            #expect(try relayOut(sandbox.file(".flowrun/state")) == 2)
            try "#define X 2\n".write(toFile: sandbox.file("include/x.h"), atomically: false, encoding: .utf8)
            #expect(try sandbox.run(Self.workflow).exitStatus == 0)
            #expect(sandbox.lines("plain.count").count == 2 && sandbox.lines("odd.count").count == 2, "an edited header was not seen")
        }
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEndParallel {
    /// SPEC §2 "Every task and fan-out member has its own log and outputs
    /// file in the run record: two names never share a file, whatever
    /// characters or length they have."
    @Suite struct RunRecordNamesTests {
        /// A property test over random fan-out items (Unicode such as 東京 and
        /// 大阪, `/`, spaces, dots, 300-byte items sharing a prefix, `a/b`
        /// and `a_b`) and two 300-byte task names sharing a prefix: each
        /// member prints and stashes a value of its own; every member has
        /// its own log and outputs file holding exactly its value, and a
        /// dependent reading the group's results (or a task's outputs) gets
        /// exactly each one's own. Duplicate items are left out (member
        /// names are another test's subject).
        @Test(arguments: 0..<3)
        func everyTaskAndMemberHasItsOwnFilesAndValues(round: Int) throws {
            var seed = UInt64.random(in: 1...UInt64.max)
            let startSeed = seed
            let items = Self.items(seed: &seed)
            let context = "seed \(startSeed), round \(round), items \(items)"
            let sandbox = try RunSandbox()
            let itemsJSON = try JSONSerialization.data(withJSONObject: items, options: .withoutEscapingSlashes)
            try sandbox.directory.write(Array(itemsJSON), to: "items.json")
            let long = String(repeating: "p", count: 299)
            let run = try sandbox.run("""
                tasks:
                  list: {run: 'cat "$SANDBOX/items.json"'}
                  \(long)1: {run: 'echo "own-1"; echo "k=own-1" >> "$FLOWRUN_OUTPUT"'}
                  \(long)2: {run: 'echo "own-2"; echo "k=own-2" >> "$FLOWRUN_OUTPUT"'}
                  read-long:
                    needs: [\(long)1, \(long)2]
                    run: printf '%s\\n' ${{ tasks.\(long)1.outputs.k }} ${{ tasks.\(long)2.outputs.k }} > "$SANDBOX/long"
                  read-results:
                    needs: fan
                    run: printf '%s' ${{ groups.fan.results }} > "$SANDBOX/results.json"
                groups:
                  fan:
                    needs: list
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: 'm ${{ item }}'
                      run: 'echo "printed-$FLOWRUN_INDEX"; echo "v=stashed-$FLOWRUN_INDEX" >> "$FLOWRUN_OUTPUT"'
                """, timeout: .seconds(60))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)\n\(context)")
            let record = try sandbox.record()

            // A dependent reads exactly each one's own values.
            #expect(sandbox.read("long") == "own-1\nown-2\n", "\(context)")
            let results = try #require(
                try JSONSerialization.jsonObject(with: Data((sandbox.read("results.json") ?? "").utf8)) as? [[String: Any]], "\(context)")
            #expect(results.count == items.count, "\(context)")
            for (index, item) in items.enumerated() {
                let member = results.first { $0["item"] as? String == item }
                #expect(member?["name"] as? String == "m " + item, "\(context)")
                #expect(member?["stdout"] as? String == "printed-\(index)", "member \(item): \(member ?? [:])\n\(context)")
                #expect((member?["outputs"] as? [String: String]) == ["v": "stashed-\(index)"], "member \(item): \(member ?? [:])\n\(context)")
            }

            // Every task that printed has its own log, holding only what it printed.
            var logs: [String: String] = [:]
            for task in record.tasks {
                let name = try #require(task["name"] as? String)
                guard let log = task["log"] as? String else { continue }  // printed nothing
                #expect(logs[log] == nil, "\(name) and \(logs[log] ?? "") share \(log)\n\(context)")
                logs[log] = name
            }
            #expect(logs.count == items.count + 3, "list, the two long ones and every member have a log\n\(context)")
            #expect(record.logText(long + "1") == "own-1\n" && record.logText(long + "2") == "own-2\n")
            for (index, item) in items.enumerated() {
                let log = try #require(record.task("m " + item)?["log"] as? String)
                #expect(record.logText("m " + item) == "printed-\(index)\n", "\(log)\n\(context)")
            }
            // And every attempt that stashed has its own outputs file.
            let outputs = try FileManager.default.contentsOfDirectory(atPath: record.directory + "/outputs")
            #expect(outputs.count == items.count + 2, "\(outputs)\n\(context)")
            let contents = Set(outputs.compactMap { ProcessProbe.text(record.directory + "/outputs/" + $0) })
            #expect(contents == Set((0..<items.count).map { "v=stashed-\($0)\n" } + ["k=own-1\n", "k=own-2\n"]), "\(context)")
            for file in outputs + logs.keys.map({ ($0 as NSString).lastPathComponent }) {
                #expect(file.utf8.count <= 60, "\(file) is long")
            }
        }

        /// The awkward items every round has, and random ones (no duplicates).
        static func items(seed: inout UInt64) -> [String] {
            let prefix = String(repeating: "x", count: 300)
            let unicodePrefix = String(repeating: "東", count: 100)
            var items = ["東京", "大阪", "a/b", "a_b", "a b", "a.b", "../up", ".hidden", "-dash", prefix + "1", prefix + "2",
                         unicodePrefix + "a", unicodePrefix + "b", "é", "ß=1"]
            let alphabet: [String] = ["東", "京", "大", "阪", "/", "_", " ", "a", "b", "é", ".", "-", "=", "ß", "😀"]
            var seen = Set(items)
            while items.count < 40 {
                let length = 1 + Int(next(&seed) % 12)
                let item = (0..<length).map { _ in alphabet[Int(next(&seed) % UInt64(alphabet.count))] }.joined()
                // Trimmed items would differ from what the member sees; keep them out.
                guard item.trimmingCharacters(in: .whitespaces) == item, seen.insert(item).inserted else { continue }
                items.append(item)
            }
            return items
        }

        /// SplitMix64: a reproducible stream from the printed seed.
        static func next(_ state: inout UInt64) -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }
}

import Foundation
import Testing

extension RunEndToEndParallel {
    /// Issue 20 item 2 (`summary.json`): a fan-out of more than 1,000 members
    /// lists its members' names and items in its group entry and leaves out
    /// the rows of plain successes; `show`, `logs` and `resume` still find
    /// every member.
    @Suite struct CompactFanOutSummaryTests {
        /// 1,500 members; member 7 prints and fails until a marker exists, member 9 prints and succeeds.
        static let workflow = """
            max_parallel: 4
            tasks:
              list:
                run: seq 1 1500
            groups:
              work:
                needs: [list]
                foreach: ${{ tasks.list.stdout }}
                task:
                  run: |
                    if [ "$FLOWRUN_INDEX" = 7 ] && [ ! -e "$SANDBOX/marker" ]; then echo seven; exit 1; fi
                    if [ "$FLOWRUN_INDEX" = 9 ]; then echo nine; fi
                    true

            """

        @Test func plainSuccessesHaveNoRowAndAreStillShownAndRestored() throws {
            let sandbox = try RunSandbox()
            let failed = try sandbox.run(Self.workflow, timeout: .seconds(300))
            #expect(failed.exitStatus == 1, "\(failed)")
            let record = try sandbox.record()
            let rows = Set(record.tasks.compactMap { $0["name"] as? String })
            #expect(rows == ["list", "work[7]", "work[9]"], "rows: \(rows.sorted().prefix(10))")
            let group = try #require(record.group("work"))
            let members = group["members"] as? [String] ?? []
            let items = group["items"] as? [String] ?? []
            #expect(members.count == 1500 && members.first == "work[0]" && members.last == "work[1499]")
            #expect(items.count == 1500 && items.first == "1" && items.last == "1500")
            #expect(group["rows_left_out"] as? Int == 1498, "\(group["rows_left_out"] ?? "none")")
            #expect(record.task("work[9]")?["stdout"] as? String == "nine")

            // `show --output json` lists a member that has no row, as succeeded with its item.
            let shown = try FlowrunBinary.run(["show", "--log-dir", sandbox.logDirectory, "--output", "json"], in: sandbox.path, environment: sandbox.environment)
            #expect(shown.exitStatus == 0, "\(shown)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any], "\(shown)")
            let tasks = json["tasks"] as? [[String: Any]] ?? []
            let plain = tasks.first { $0["name"] as? String == "work[5]" }
            #expect(plain?["status"] as? String == "succeeded" && plain?["item"] as? String == "6", "\(plain ?? [:])")
            #expect(tasks.count(where: { ($0["name"] as? String)?.hasPrefix("work[") == true }) == 1500)

            // `logs` of a member with no row: it printed nothing.
            let logs = try FlowrunBinary.run(["logs", "--log-dir", sandbox.logDirectory, "latest", "work[5]"], in: sandbox.path, environment: sandbox.environment)
            #expect(logs.exitStatus == 0 && logs.stdout.isEmpty, "\(logs)")

            // `resume` restores every member but the failed one from the compact summary.
            _ = FileManager.default.createFile(atPath: sandbox.file("marker"), contents: Data())
            let resumed = try FlowrunBinary.run(["resume", "--log-dir", sandbox.logDirectory, "--output", "plain"], in: sandbox.path, environment: sandbox.environment, timeout: .seconds(300))
            #expect(resumed.exitStatus == 0, "\(resumed)")
            let runs = runFolders(in: sandbox.logDirectory).filter(isRunID)
            let newest = try runs.map { try RunRecordFiles(directory: sandbox.logDirectory + "/" + $0) }.first { !$0.events("run_started").isEmpty && $0.summary["resumed_from"] != nil }
            let resumedRecord = try #require(newest, "no resumed record among \(runs)")
            let started = resumedRecord.names("task_started")
            #expect(started == ["work[7]"], "the resumed run started \(started.prefix(10))")
            // Restored plain members have no row either: the resumed summary is not a row per member.
            let resumedRows = Set(resumedRecord.tasks.compactMap { $0["name"] as? String })
            #expect(resumedRows == ["list", "work[9]"], "resumed rows: \(resumedRows.sorted().prefix(10))")
            let resumedGroup = try #require(resumedRecord.group("work"))
            #expect(resumedGroup["rows_left_out"] as? Int == 1499, "\(resumedGroup["rows_left_out"] ?? "none")")
            #expect(resumedGroup["left_out_restored"] as? Int == 1498, "\(resumedGroup["left_out_restored"] ?? "none")")
            #expect(resumedRecord.task("work[9]")?["stdout"] as? String == "nine")
            // A resume of the resumed run still finds every member, and has nothing left to run.
            let again = try FlowrunBinary.run(["resume", "--log-dir", sandbox.logDirectory, "--dry-run"], in: sandbox.path, environment: sandbox.environment, timeout: .seconds(120))
            #expect(again.exitStatus == 0, "\(again)")
        }
    }
}

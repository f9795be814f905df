import Foundation
import Testing

extension RunEndToEndParallel {
    /// Issue 16 items 1, 2, 7, 10 with the built binary: no value is ever cut
    /// (SPEC §2), member names stay unique, and a tolerated failure counts
    /// toward a join's `need` (SPEC §5).
    @Suite struct RunValueEdgeTests {
        /// A stdout of 150,000 lines (1.8 MB, past the stash's 1 MiB) feeds a
        /// foreach whole: 150,000 members, the first and the last line each a
        /// member, all succeeded. (Before: 87,381 members, the first a fragment.)
        @Test func aForeachOverAStdoutPastOneMiBUsesEveryLine() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                max_parallel: 64
                tasks:
                  list:
                    run: seq -f 'item-%06g' 1 150000
                groups:
                  fan:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: ${{ item }}
                      sleep: 0s
                """, timeout: .seconds(120))
            print(String(format: "values 150,000-line foreach: %.2f s wall", run.wallSeconds))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.wallSeconds < 40, "took \(run.wallSeconds) s")
            let runs = runFolders(in: sandbox.logDirectory)
            let folder = sandbox.logDirectory + "/" + (runs.first ?? "?")
            // Raw text: parsing 300,000 events would dwarf the run itself.
            let events = try String(contentsOfFile: folder + "/events.jsonl", encoding: .utf8)
            let groupFinished = try #require(events.split(separator: "\n").last { $0.contains(#""event":"group_finished""#) })
            #expect(groupFinished.contains(#""status":"succeeded""#), "\(groupFinished)")
            #expect(groupFinished.contains(#""members":150000"#), "\(groupFinished)")
            #expect(groupFinished.contains(#""succeeded":150000"#), "\(groupFinished)")
            for name in ["item-000001", "item-000002", "item-149999", "item-150000"] {
                #expect(events.contains(#""task":"\#(name)""#), "no member \(name)")
            }
            // The whole stdout is on disk, next to the log, owner-only.
            let spillName = try #require(try FileManager.default.contentsOfDirectory(atPath: folder + "/logs/000")
                .first { $0.hasSuffix("-list.log.1.stdout") }, "no spill file in \(folder)/logs/000")
            let spill = try FileManager.default.attributesOfItem(atPath: folder + "/logs/000/" + spillName)
            #expect((spill[.size] as? NSNumber)?.intValue == 150_000 * 12)
            #expect((spill[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }

        /// Any other use of a value over 1 MiB fails the referring task with a
        /// message naming the value and its size: in `run:`, `env:` and `if:`.
        @Test func aValuePastOneMiBOutsideAForeachFailsTheTaskThatUsesIt() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  list:
                    run: head -c 1500000 /dev/zero | tr '\\0' 'x'
                  in-run:
                    needs: [list]
                    run: echo ${{ tasks.list.stdout }} > "$SANDBOX/ran"
                  in-env:
                    needs: [list]
                    env: { BIG: "${{ tasks.list.stdout }}" }
                    run: touch "$SANDBOX/ran"
                  in-if:
                    needs: [list]
                    if: ${{ tasks.list.stdout != '' }}
                    run: touch "$SANDBOX/ran"
                  in-results:
                    needs: [g]
                    run: echo ${{ groups.g.results }} > "$SANDBOX/ran"
                groups:
                  g:
                    tasks:
                      member:
                        run: head -c 1500000 /dev/zero | tr '\\0' 'y'
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            #expect(!sandbox.exists("ran"), "a task ran with a cut value")
            let record = try sandbox.record()
            for task in ["in-run", "in-env", "in-if"] {
                #expect(record.status(task) == "failed", "\(task)\n\(record.overview)")
                let reason = record.finished(task)?["reason"] as? String ?? ""
                #expect(reason.hasSuffix("tasks.list.stdout is 1.4 MiB; values over 1 MiB can only feed a foreach"), "\(task): \(reason)")
            }
            // A group's results holding such a stdout: the same rule, the value named as written.
            let reason = record.finished("in-results")?["reason"] as? String ?? ""
            #expect(record.status("in-results") == "failed", "\(record.overview)")
            #expect(reason.hasSuffix("groups.g.results is 1.4 MiB; values over 1 MiB can only feed a foreach"), "\(reason)")
        }

        /// A 500 KiB value (over the kernel's 128 KiB for one argument, under
        /// 1 MiB) in `run:` works: the script runs from a file. In `env:` it
        /// fails with flowrun's own message, not "Argument list too long".
        @Test func aFiveHundredKiBValueRunsInAScriptAndIsRefusedInEnvByName() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  value:
                    run: head -c 512000 /dev/zero | tr '\\0' 'x'
                  in-run:
                    needs: [value]
                    run: printf %s ${{ tasks.value.stdout }} | wc -c
                  in-env:
                    needs: [value]
                    env: { BIG: "${{ tasks.value.stdout }}" }
                    run: printf %s "$BIG" | wc -c
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("in-run") == "succeeded", "\(record.overview)")
            #expect(record.stdout("in-run")?.trimmingCharacters(in: .whitespaces) == "512000")
            #expect(record.status("in-env") == "failed")
            let reason = record.finished("in-env")?["reason"] as? String ?? ""
            #expect(reason.contains("env BIG is 500.0 KiB; one environment variable can hold at most 128 KiB"), "\(reason)")
            #expect(!run.stdout.contains("Argument list too long") && !run.stderr.contains("Argument list too long"), "\(run)")
        }

        /// Items `a`, `a`, `b`, `a` named `fetch-${{ item }}` next to a static
        /// task `fetch-b`: no member is renamed (issue 23 item 5) — the names
        /// are known before the run, so the file does not validate, and the
        /// error says which members collide.
        @Test func duplicateMemberNamesAreAnErrorNotRenamed() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  fetch-b:
                    run: echo static
                groups:
                  fetch:
                    foreach: [a, a, b, a]
                    task:
                      name: fetch-${{ item }}
                      run: echo "$FLOWRUN_TASK $FLOWRUN_INDEX"
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 2, "\(run)")
            #expect(run.stderr.contains("workflow.yaml:8:13: error: members 0 and 1 of group 'fetch' would both be named 'fetch-a'; member names must be unique: make name: tell them apart (e.g. with ${{ index }})"), "\(run)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.logDirectory), "nothing ran")
        }

        /// A member allowed to fail (`continue_on_error: true`) counts as
        /// succeeded for `need: all` and `need: 2`: the joins succeed, nothing
        /// is cancelled, the run exits 0, the member stays failed.
        @Test(arguments: ["all", "2"])
        func aToleratedFailureCountsTowardAJoinsNeed(need: String) throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  flaky:
                    run: exit 3
                    continue_on_error: true
                  slow:
                    run: sleep 0.3; touch "$SANDBOX/slow-finished"
                  after:
                    needs: [ready]
                    run: echo after
                joins:
                  ready:
                    wait: [flaky, slow]
                    need: \(need)
                """)
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.status("flaky") == "failed", "\(record.overview)")
            #expect(record.status("slow") == "succeeded", "\(record.overview)")
            #expect(sandbox.exists("slow-finished"))
            let join = DispatchSupport.joinCompleted("ready", in: record)
            #expect(join?["status"] as? String == "succeeded", "\(record.overview)")
            #expect(record.status("after") == "succeeded", "\(record.overview)")
        }

        /// Property: 300 distinct items drawn at random (seeded) from a pool
        /// with Unicode, `/`, spaces, brackets, `~` and names like the group's
        /// own `GROUP[INDEX]` form never give two members one name, each
        /// member is named exactly its item, and its stash is its own item.
        @Test func randomItemsNeverShareAMemberName() throws {
            var state: UInt64 = 0x5EED_F10A
            func next() -> Int {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Int(state >> 33)
            }
            let pool = ["a", "a~2", "東京", "大阪", "a/b", "a_b", "x y", "g[0]", "g[1]", "Ω", String(repeating: "long", count: 20)]
            // Duplicates would fail the group (names are never renamed): a repeat gets its position appended.
            var seen = Set<String>()
            let items = (0..<300).map { position -> String in
                let item = pool[next() % pool.count]
                return seen.insert(item).inserted ? item : "\(item) #\(position)"
            }
            let sandbox = try RunSandbox()
            try sandbox.directory.write(items.joined(separator: "\n") + "\n", to: "items.txt")
            let run = try sandbox.run("""
                max_parallel: 16
                tasks:
                  fetch:
                    run: cat "$SANDBOX/items.txt"
                groups:
                  g:
                    needs: [fetch]
                    foreach: ${{ tasks.fetch.stdout }}
                    task:
                      name: ${{ item }}
                      run: printf '%s' "$FLOWRUN_ITEM"
                """, timeout: .seconds(60))
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let members = record.tasks.filter { $0["name"] as? String != "fetch" }
            let names = members.compactMap { $0["name"] as? String }
            #expect(names.count == 300)
            #expect(Set(names).count == 300, "duplicate names: \(Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted())")
            #expect(!names.contains("fetch"), "a member took the static task's name")
            for member in members {
                // A member's stash is its own item, and its name that item.
                let name = member["name"] as? String ?? ""
                let item = member["stdout"] as? String ?? "?"
                #expect(name == item, "\(name) ran item \(item)")
            }
            #expect(members.compactMap { $0["stdout"] as? String }.sorted() == items.sorted(), "the members' items differ from the list")
        }
    }
}

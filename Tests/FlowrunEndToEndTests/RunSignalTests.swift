import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunEndToEnd {
    /// SPEC §7 "Signals": SIGINT, SIGTERM or SIGHUP to flowrun's process
    /// group (what a terminal does on Ctrl-C) sends SIGTERM once to every
    /// running task, cancels what has not started, runs `finally`, prints the
    /// summary and exits 128+N; a second signal kills everything at once.
    ///
    /// No sleeps race the signal: each task writes a ready file after
    /// installing its trap, and the test signals only once every file is there.
    @Suite struct RunSignalTests {
        struct Stop: CustomTestStringConvertible, Sendable {
            var name: String
            var signal: Int32
            var exitCode: Int32
            var testDescription: String { "\(name) → \(exitCode)" }
        }

        static let stops = [
            Stop(name: "SIGINT", signal: SIGINT, exitCode: 130),
            Stop(name: "SIGTERM", signal: SIGTERM, exitCode: 143),
            Stop(name: "SIGHUP", signal: SIGHUP, exitCode: 129),
        ]

        /// A task whose trap appends one line per SIGTERM, keeps running for
        /// 0.5 s more (so a second SIGTERM would show as a second line), then
        /// exits. Ready once the trap is installed.
        static func trappingTask(_ name: String, indent: String = "  ") -> String {
            """
            \(indent)\(name):
            \(indent)  run: |
            \(indent)    trap 'echo TERM >> "$SANDBOX/\(name).trap"; stop=1' TERM
            \(indent)    echo ready > "$SANDBOX/\(name).ready"
            \(indent)    while [ -z "$stop" ]; do sleep 0.05; done
            \(indent)    sleep 0.5
            \(indent)    echo "$(date +%s.%N)" > "$SANDBOX/\(name).exited"
            \(indent)    exit 0

            """
        }

        static let twoRunningTasks = """
            kill_grace: 10s
            max_parallel: 4
            tasks:
            \(trappingTask("one"))\(trappingTask("two"))  dependent:
                needs: [one, two]
                run: echo started > "$SANDBOX/dependent.marker"
              later:
                needs: dependent
                run: echo started > "$SANDBOX/later.marker"
            finally:
              cleanup:
                run: |
                  echo ran > "$SANDBOX/finally.marker"
                  echo cleanup saw one=${{ tasks.one.status }} dependent=${{ tasks.dependent.status }}
            """

        @Test(arguments: stops)
        func aSignalToTheProcessGroupStopsTheRunCleanly(_ stop: Stop) throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start(Self.twoRunningTasks)
            let ready = sandbox.waitFor("one.ready") && sandbox.waitFor("two.ready")
            try #require(ready, "the tasks never became ready\n\(flowrun.wait(upTo: .seconds(1)).map(\.description) ?? "")")
            let signalled = flowrun.elapsed
            flowrun.signalGroup(stop.signal)
            let ended = flowrun.finish()

            #expect(!ended.hung, "\(ended)")
            #expect(ended.exitStatus == stop.exitCode, "\(ended)")
            // Each trap ran once and its task ended 0.5 s later: far sooner than the 10 s grace.
            #expect(ended.wallSeconds - signalled < 4, "flowrun took \(ended.wallSeconds - signalled) s after the signal\n\(ended)")
            for task in ["one", "two"] {
                #expect(sandbox.lines("\(task).trap") == ["TERM"], "\(task) got SIGTERM \(sandbox.lines("\(task).trap").count) times")
                #expect(sandbox.exists("\(task).exited"), "\(task) never finished its trap")
            }
            #expect(!sandbox.exists("dependent.marker"), "a dependent of the interrupted tasks started")
            #expect(!sandbox.exists("later.marker"), "a task two steps down started")
            #expect(sandbox.read("finally.marker") == "ran\n", "the finally task did not run")
            #expect(ended.stdout.contains("run      finished in"), "no summary printed\n\(ended)")
            #expect(ended.stdout.contains("exit \(stop.exitCode)"), "\(ended)")

            let record = try sandbox.record()
            #expect(record.exitCode == Int(stop.exitCode), "\(record.overview)")
            #expect(record.summary["stopped_by"] as? String == "signal", "\(record.summary["stopped_by"] ?? "nil")")
            #expect(record.status("one") == "cancelled" && record.status("two") == "cancelled", "\(record.statuses)")
            for task in ["dependent", "later"] {
                #expect(["cancelled", "skipped"].contains(record.status(task) ?? ""), "\(task): \(record.status(task) ?? "nil")")
                #expect(record.events("task_started", task: task).isEmpty, "\(task) has a task_started event")
                #expect(record.finished(task) != nil, "\(task) has no task_finished event: \(record.overview)")
            }
            #expect(record.status("cleanup") == "succeeded", "\(record.statuses)")
            #expect(record.stdout("cleanup") == "cleanup saw one=cancelled dependent=\(record.status("dependent") ?? "?")")
            let runFinished = try #require(record.events("run_finished").last)
            #expect(integer(runFinished["exit_code"]) == Int(stop.exitCode), "\(runFinished)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// Waiting tasks (no free slot) and tasks backing off before a retry
        /// are pending work too: a signal cancels them, they never start.
        @Test func aSignalCancelsTasksWaitingForASlotOrARetry() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                kill_grace: 10s
                max_parallel: 4
                semaphores: {db: 1}
                tasks:
                  one:
                    semaphores: [db]
                    run: |
                      trap 'echo TERM >> "$SANDBOX/one.trap"; exit 0' TERM
                      echo ready > "$SANDBOX/one.ready"
                      while :; do sleep 0.05; done
                  queued:
                    semaphores: [db]
                    run: echo started > "$SANDBOX/queued.marker"
                  flaky:
                    retries: 3
                    retry_delay: 30s
                    run: echo "$FLOWRUN_ATTEMPT" >> "$SANDBOX/flaky.attempts"; exit 1
                """)
            // `one` holds the only db slot with its trap installed, `queued`
            // waits for it, and `flaky` has failed once and backs off.
            let ready = sandbox.waitFor("one.ready") && sandbox.waitForEvent("task_retrying")
            try #require(ready, "the tasks never reached the state to interrupt")
            try #require(sandbox.waitForEvent("task_waiting"), "queued never waited for the db slot")
            flowrun.signalGroup(SIGINT)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(ended.wallSeconds < 8, "\(ended)")
            #expect(!sandbox.exists("queued.marker"), "a task waiting for a slot started after the signal")
            #expect(sandbox.lines("flaky.attempts") == ["1"], "a task backing off was retried after the signal")
            #expect(sandbox.lines("one.trap") == ["TERM"])
            let record = try sandbox.record()
            #expect(record.statuses == ["one": "cancelled", "queued": "cancelled", "flaky": "cancelled"], "\(record.overview)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// A second signal while `finally` runs: the finally task traps TERM
        /// and would run for 1000 s; it is killed at once, and flowrun exits
        /// promptly with 128 + the first signal.
        @Test(arguments: stops)
        func aSecondSignalKillsTheFinallyTasksAtOnce(_ stop: Stop) throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                kill_grace: 30s
                tasks:
                \(Self.trappingTask("main"))
                finally:
                  stubborn-cleanup:
                    run: |
                      trap 'echo TERM >> "$SANDBOX/cleanup.trap"' TERM
                      echo $$ > "$SANDBOX/cleanup.pid"
                      sleep 1000 &
                      echo $! > "$SANDBOX/cleanup-child.pid"
                      echo ready > "$SANDBOX/cleanup.ready"
                      while :; do sleep 0.05; done
                  after-cleanup:
                    needs: stubborn-cleanup
                    when: always
                    run: echo started > "$SANDBOX/after-cleanup.marker"
                """)
            try #require(sandbox.waitFor("main.ready"), "the main task never became ready")
            flowrun.signalGroup(stop.signal)
            try #require(sandbox.waitFor("cleanup.ready"), "finally never started after the first signal\n\(flowrun.wait(upTo: .seconds(1)).map(\.description) ?? "")")
            let second = flowrun.elapsed
            flowrun.signalGroup(stop.signal)
            let ended = flowrun.finish()

            #expect(!ended.hung, "\(ended)")
            #expect(ended.exitStatus == stop.exitCode, "\(ended)")
            #expect(ended.wallSeconds - second < 2.5, "flowrun took \(ended.wallSeconds - second) s after the second signal (grace is 30 s)\n\(ended)")
            #expect(sandbox.lines("main.trap") == ["TERM"])
            #expect(!sandbox.exists("after-cleanup.marker"), "a finally task started after the second signal")
            for file in ["cleanup.pid", "cleanup-child.pid"] {
                let pid = try #require(sandbox.pid(in: file))
                #expect(!ProcessProbe.isAlive(pid), "\(file): \(pid) outlived flowrun")
            }
            let record = try sandbox.record()
            #expect(record.status("main") == "cancelled", "\(record.statuses)")
            #expect(["cancelled", "failed"].contains(record.status("stubborn-cleanup") ?? ""), "\(record.statuses)")
            #expect(["cancelled", "skipped"].contains(record.status("after-cleanup") ?? ""), "\(record.statuses)")
            #expect(record.exitCode == Int(stop.exitCode))
            #expect(ended.stdout.contains("run      finished in"), "no summary printed\n\(ended)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// A second signal during the main phase: a task that shrugs off
        /// SIGTERM (grace 30 s) is killed at once; `finally` is not started.
        @Test func aSecondSignalKillsATaskThatIgnoresTheFirst() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                kill_grace: 30s
                tasks:
                  stubborn:
                    run: |
                      trap 'echo TERM >> "$SANDBOX/stubborn.trap"' TERM
                      echo ready > "$SANDBOX/stubborn.ready"
                      while :; do sleep 0.05; done
                finally:
                  cleanup:
                    run: echo ran > "$SANDBOX/finally.marker"
                """)
            try #require(sandbox.waitFor("stubborn.ready"))
            flowrun.signalGroup(SIGINT)
            // The first signal was handled once the trap logged it.
            try #require(sandbox.waitFor("stubborn.trap"), "the task never got SIGTERM after the first signal")
            let second = flowrun.elapsed
            flowrun.signalGroup(SIGINT)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(ended.wallSeconds - second < 2.5, "flowrun took \(ended.wallSeconds - second) s after the second signal\n\(ended)")
            #expect(sandbox.lines("stubborn.trap") == ["TERM"])
            #expect(!sandbox.exists("finally.marker"), "finally ran after a second signal")
            let record = try sandbox.record()
            #expect(record.status("stubborn") == "cancelled", "\(record.statuses)")
            #expect(record.status("cleanup") == "cancelled", "\(record.statuses)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// The run is already stopping — `fail_fast` after a failure, or the
        /// run's `timeout` — and a task is taking its grace to exit when the
        /// user presses Ctrl-C for the first time. That is a first signal,
        /// not a second: no second SIGTERM and no SIGKILL before the grace,
        /// `finally` still runs (SPEC §6 "after a first Ctrl-C"), exit 130.
        @Test(arguments: ["fail_fast", "run timeout"])
        func aFirstSignalWhileTheRunIsAlreadyStoppingStillRunsFinally(_ why: String) throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                kill_grace: 20s
                max_parallel: 4
                \(why == "fail_fast" ? "fail_fast: true" : "timeout: 500ms")
                tasks:
                  slow:
                    run: |
                      trap 'echo TERM >> "$SANDBOX/slow.trap"; stop=1' TERM
                      echo ready > "$SANDBOX/slow.ready"
                      while [ -z "$stop" ]; do sleep 0.05; done
                      while [ ! -e "$SANDBOX/release" ]; do sleep 0.05; done
                      exit 0
                  bad:
                    run: |
                      while [ ! -e "$SANDBOX/slow.ready" ]; do sleep 0.01; done
                      \(why == "fail_fast" ? "exit 1" : "sleep 30")
                finally:
                  cleanup: {run: "echo ran > $SANDBOX/finally.marker"}
                """)
            // The run is stopping once slow's trap has logged the SIGTERM.
            try #require(sandbox.waitFor("slow.trap"), "the run never started stopping\n\(flowrun.wait(upTo: .seconds(1)).map(\.description) ?? "")")
            flowrun.signalGroup(SIGINT)
            // flowrun must still be waiting for slow (grace 20 s), not have killed it.
            let early = flowrun.wait(upTo: .milliseconds(500))
            #expect(early == nil, "flowrun ended at once on a first Ctrl-C: \(early.map(\.description) ?? "")")
            _ = FileManager.default.createFile(atPath: sandbox.file("release"), contents: nil)
            let ended = flowrun.finish()
            // After a run timeout either code is defensible (the timeout stopped it first); a signal is 130.
            #expect(why == "fail_fast" ? ended.exitStatus == 130 : [124, 130].contains(ended.exitStatus ?? -1), "\(ended)")
            #expect(sandbox.lines("slow.trap") == ["TERM"], "slow got \(sandbox.lines("slow.trap").count) SIGTERMs")
            #expect(sandbox.read("finally.marker") == "ran\n", "finally did not run after a first Ctrl-C\n\(ended)")
            let record = try sandbox.record()
            #expect(record.status("cleanup") == "succeeded", "\(record.statuses)")
            #expect(record.finished("slow")?["signal"] == nil, "slow was killed by a signal: \(record.finished("slow") ?? [:])")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// A task already in its timeout's grace when Ctrl-C comes: it has
        /// had its SIGTERM and gets no second one; it ends `timed_out`.
        @Test func aTaskInItsTimeoutGraceGetsNoSecondSIGTERM() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                kill_grace: 20s
                tasks:
                  slow:
                    timeout: 300ms
                    run: |
                      trap 'echo TERM >> "$SANDBOX/slow.trap"' TERM
                      while [ ! -e "$SANDBOX/release" ]; do sleep 0.05; done
                finally:
                  cleanup: {run: "echo ran > $SANDBOX/finally.marker"}
                """)
            try #require(sandbox.waitFor("slow.trap"), "the timeout never fired")
            flowrun.signalGroup(SIGINT)
            // Give a duplicate SIGTERM every chance to show up before the task may end.
            let early = flowrun.wait(upTo: .milliseconds(500))
            #expect(early == nil, "\(early.map(\.description) ?? "")")
            _ = FileManager.default.createFile(atPath: sandbox.file("release"), contents: nil)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(sandbox.lines("slow.trap") == ["TERM"], "slow got \(sandbox.lines("slow.trap").count) SIGTERMs")
            #expect(sandbox.read("finally.marker") == "ran\n")
            let record = try sandbox.record()
            #expect(record.status("slow") == "timed_out", "\(record.statuses)")
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }

        /// Signals go to the group in a terminal, but `kill PID` reaches
        /// flowrun alone: the tasks (in groups of their own) must still be
        /// stopped by flowrun, not by the signal.
        @Test func aSignalToFlowrunAloneStillStopsEveryTask() throws {
            let sandbox = try RunSandbox()
            let flowrun = try sandbox.start("""
                kill_grace: 10s
                tasks:
                \(Self.trappingTask("one"))
                """)
            try #require(sandbox.waitFor("one.ready"))
            kill(flowrun.pid, SIGTERM)
            let ended = flowrun.finish()
            #expect(ended.exitStatus == 143, "\(ended)")
            #expect(sandbox.lines("one.trap") == ["TERM"])
            #expect(sandbox.survivors().isEmpty, "survivors: \(sandbox.describeSurvivors())")
        }
    }
}

import Foundation
import Testing

extension RunEndToEndParallel {
    /// Order on the command line (SPEC §15, issue 35): `flowrun FILE clean
    /// build` runs the targets one after another, each with what it needs,
    /// as `task`, `just` and `make` without `-j` do; `--parallel` runs them
    /// together. A `sequential` member's own needs start when it is reached.
    @Suite struct TargetOrderTests {
        /// `clean` watches for a second while it runs: were `build` started
        /// next to it (the old behaviour), `clean` would see its mark and fail.
        static let cleanBuild = """
            tasks:
              setup: {run: "echo setup >> $SANDBOX/order"}
              clean:
                needs: setup
                run: |
                  for i in 1 2 3 4 5 6 7 8 9 10; do
                    if [ -e "$SANDBOX/build-started" ]; then echo "build started during clean" >&2; exit 1; fi
                    sleep 0.1
                  done
                  echo clean >> $SANDBOX/order
              build:
                needs: setup
                run: "touch $SANDBOX/build-started; echo build >> $SANDBOX/order"
              broken: {run: "exit 3"}
            """

        @Test func targetsRunOneAfterAnotherInTheOrderGiven() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.cleanBuild, ["clean", "build"])
            run.expectNoCrash()
            #expect(run.exitStatus == 0, "\(run)")
            // setup, needed by both, runs once: in the first target.
            #expect(sandbox.lines("order") == ["setup", "clean", "build"], "\(run)")
        }

        /// `build` is slow and `clean` quick: started together, `clean`
        /// would finish first; in order, `build` (named first) does.
        @Test func theOrderIsTheCommandLinesNotTheFiles() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  clean: {run: "echo clean >> $SANDBOX/order"}
                  build: {run: "sleep 0.5; echo build >> $SANDBOX/order"}
                """, ["build", "clean"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("order") == ["build", "clean"], "\(run)")
        }

        /// As make without -k: a failed target stops the ones after it.
        @Test func aFailedTargetSkipsTheLaterOnes() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.cleanBuild, ["broken", "build"])
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses["setup"] == "skipped" && record.statuses["build"] == "skipped", "\(run)")
            // setup is where the second target starts: it carries the reason.
            #expect(record.finished("setup")?["reason"] as? String == "broken did not succeed (targets run in the order given)", "\(run)")
            #expect(!sandbox.exists("build-started"))
        }

        /// `--parallel`: each waits for the other's mark, so only together do both finish.
        @Test func parallelStartsThemTogether() throws {
            let sandbox = try RunSandbox()
            let handshake = """
                tasks:
                  left: {run: "touch $SANDBOX/left; for i in $(seq 100); do [ -e $SANDBOX/right ] && exit 0; sleep 0.05; done; exit 1"}
                  right: {run: "touch $SANDBOX/right; for i in $(seq 100); do [ -e $SANDBOX/left ] && exit 0; sleep 0.05; done; exit 1"}
                """
            let together = try sandbox.run(handshake, ["left", "right", "--parallel"])
            #expect(together.exitStatus == 0, "\(together)")
        }

        @Test func theDryRunSaysWhatWaitsForWhichTarget() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run(Self.cleanBuild, ["clean", "build", "--dry-run"])
            #expect(run.exitStatus == 0, "\(run)")
            #expect(run.stdout.contains("after:     clean (targets run in the order given)"), "\(run.stdout)")
            let json = try sandbox.run(Self.cleanBuild, ["clean", "build", "--dry-run"], output: "json")
            #expect(json.stdout.contains(#""runs_after_reason" : "targets run in the order given""#), "\(json.stdout)")
        }

        /// A group target waits as a whole: its members start after the target before it.
        @Test func aGroupTargetWaitsForTheOneBefore() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  first:
                    run: |
                      for i in 1 2 3 4 5 6 7 8 9 10; do
                        if [ -e "$SANDBOX/member" ]; then exit 1; fi
                        sleep 0.1
                      done
                groups:
                  later:
                    foreach: [a, b]
                    task: {run: "touch $SANDBOX/member"}
                """, ["first", "later"])
            #expect(run.exitStatus == 0, "\(run)")
        }

        /// go-task's `task:` call: `upload`'s need `creds` starts when
        /// `upload` is reached, after `build`, not with the group.
        @Test func aSequentialMembersNeedsStartWhenItIsReached() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  creds: {run: "touch $SANDBOX/creds"}
                groups:
                  release:
                    sequential: true
                    tasks:
                      build:
                        run: |
                          for i in 1 2 3 4 5 6 7 8 9 10; do
                            if [ -e "$SANDBOX/creds" ]; then echo "creds ran before build finished" >&2; exit 1; fi
                            sleep 0.1
                          done
                      upload: {run: "test -e $SANDBOX/creds", needs: creds}
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["creds": "succeeded", "build": "succeeded", "upload": "succeeded"], "\(run)")
        }
    
        /// Both orders at once never wait in a circle: `q` is reached in the
        /// sequence (after `m1`), so naming it first runs the group with it.
        @Test func aTargetThatASequentialMemberNeedsDoesNotDeadlock() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  q: {run: "echo q >> $SANDBOX/order"}
                groups:
                  g:
                    sequential: true
                    tasks:
                      m1: {run: "echo m1 >> $SANDBOX/order"}
                      m2: {run: "echo m2 >> $SANDBOX/order", needs: q}
                """, ["q", "g"], timeout: .seconds(20))
            #expect(run.exitStatus == 0, "\(run)")
            #expect(sandbox.lines("order") == ["m1", "q", "m2"], "\(run)")
        }
    }
}

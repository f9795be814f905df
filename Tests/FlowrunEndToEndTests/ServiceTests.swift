import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A TCP port nothing listens on now (bound to port 0, then let go).
func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw FlowrunBinaryError("socket: \(errno)") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
    }
    guard bound else { throw FlowrunBinaryError("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension RunEndToEnd {
    /// `service: true` with `ready:` probes (SPEC §14, issue 36): dependents
    /// start when the probe passes; the service is stopped at the run's end.
    @Suite struct ServiceTests {
        /// A python3 http.server on `port`, and what fetches its page.
        static func server(_ port: Int) -> String { "exec python3 -m http.server \(port) --bind 127.0.0.1" }
        static func fetch(_ port: Int) -> String {
            "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:\(port)/\").status)'"
        }

        @Test func dependentsStartWhenTheTCPProbePassesAndTheServiceIsStoppedAfterFinally() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            let run = try sandbox.run("""
                tasks:
                  web:
                    service: true
                    run: \(Self.server(port))
                    ready: { tcp: "127.0.0.1:\(port)", timeout: 20s }
                  test:
                    needs: [web]
                    run: \(Self.fetch(port))
                finally:
                  still-up:
                    run: \(Self.fetch(port))
                """, output: "json")
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["web": "succeeded", "test": "succeeded", "still-up": "succeeded"], "\(run)")
            #expect(record.stdout("test") == "200")
            #expect(record.stdout("still-up") == "200", "finally ran while the service was up")
            // The order of events: started, ready, the dependent, then the service's end.
            let order = record.events.compactMap { $0 }.compactMap { event -> String? in
                guard let kind = event["event"] as? String, let task = event["task"] as? String else { return nil }
                return "\(kind) \(task)"
            }
            #expect(order.firstIndex(of: "task_ready web")! < order.firstIndex(of: "task_started test")!, "\(order)")
            #expect(order.last == "task_finished web", "\(order)")
            #expect(record.events("task_started", task: "web").first?["probe"] as? String == "tcp 127.0.0.1:\(port)")
            #expect(record.finished("web")?["reason"] as? String == "service stopped by flowrun")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aServiceThatNeverBecomesReadyFailsAfterItsTimeoutWithTheProbesLastError() throws {
            let sandbox = try RunSandbox()
            let port = try freePort()
            let run = try sandbox.run("""
                tasks:
                  db:
                    service: true
                    run: sleep 60
                    ready: { tcp: "127.0.0.1:\(port)", timeout: 1s, interval: 100ms }
                  test:
                    needs: [db]
                    run: echo never
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["db": "failed", "test": "skipped"], "\(run)")
            #expect(record.finished("db")?["reason"] as? String == "not ready after 1s: connection refused (127.0.0.1:\(port))", "\(run)")
            #expect(run.wallSeconds < 12, "the probe's timeout, then kill_grace at most: \(run.wallSeconds)s")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aServiceThatExitsOnItsOwnFailsAndCancelsItsRunningDependents() throws {
            let sandbox = try RunSandbox()
            // The service waits for its dependent to have started (a handshake), then exits 3.
            let run = try sandbox.run("""
                tasks:
                  broker:
                    service: true
                    run: |
                      echo "broker listening"
                      while [ ! -e "$SANDBOX/consumer-started" ]; do sleep 0.02; done
                      exit 3
                    ready: { line: "listening$" }
                  consumer:
                    needs: [broker]
                    run: touch "$SANDBOX/consumer-started"; sleep 60
                  report:
                    needs: [consumer]
                    run: echo never
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["broker": "failed", "consumer": "cancelled", "report": "skipped"], "\(run)")
            #expect(record.finished("broker")?["reason"] as? String == "the service exited on its own (exit 3)")
            #expect(record.finished("consumer")?["reason"] as? String == "service_exited")
            #expect(run.wallSeconds < 20, "the consumer was stopped, not waited for: \(run.wallSeconds)s")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aServiceThatExitsBeforeItIsReadyFails() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                tasks:
                  web:
                    service: true
                    run: echo starting
                    ready: { line: "never printed" }
                  test:
                    needs: [web]
                    run: echo never
                """)
            #expect(run.exitStatus == 1, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["web": "failed", "test": "skipped"], "\(run)")
            #expect(record.finished("web")?["reason"] as? String == "the service exited before it was ready (exit 0)")
        }

        @Test func httpAndRunProbesWaitForTheirCheckToPass() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            // The second service is ready when a file exists, which it makes after a handshake with nothing: a delay of its own.
            let run = try sandbox.run("""
                tasks:
                  web:
                    service: true
                    run: \(Self.server(port))
                    ready: { http: "http://127.0.0.1:\(port)/", status: 200, interval: 50ms }
                  flag:
                    service: true
                    run: |
                      sleep 0.3
                      touch "$SANDBOX/flag-ready"
                      exec sleep 60
                    ready: { run: 'test -e "$SANDBOX/flag-ready"', interval: 50ms }
                  test:
                    needs: [web, flag]
                    run: \(Self.fetch(port)); test -e "$SANDBOX/flag-ready" && echo flag
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.statuses == ["web": "succeeded", "flag": "succeeded", "test": "succeeded"], "\(run)")
            #expect(record.stdout("test") == "200\nflag")
            #expect(record.events("task_ready", task: "web").first?["probe"] as? String == "http http://127.0.0.1:\(port)/ → 200")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func ctrlCStopsAReadyServiceAndLeavesNothingRunning() throws {
            _ = try RunSandbox.tool("python3")
            let sandbox = try RunSandbox()
            let port = try freePort()
            let live = try sandbox.start("""
                tasks:
                  web:
                    service: true
                    run: \(Self.server(port))
                    ready: { tcp: "localhost:\(port)" }
                  wait:
                    needs: [web]
                    run: sleep 60
                """)
            #expect(sandbox.waitForEvent("task_ready"), "the service never became ready")
            live.signalGroup(SIGINT)
            let ended = live.finish()
            #expect(ended.exitStatus == 130, "\(ended)")
            #expect(!ended.hung)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aServiceIsStartedAgainByResumeNeverRestored() throws {
            let sandbox = try RunSandbox()
            let workflow = """
                tasks:
                  svc:
                    service: true
                    run: echo up; exec sleep 60
                    ready: { line: "^up$" }
                  test:
                    needs: [svc]
                    run: test -e "$SANDBOX/pass"
                """
            let first = try sandbox.run(workflow)
            #expect(first.exitStatus == 1, "\(first)")
            let firstRun = runFolders(in: sandbox.logDirectory)
            _ = FileManager.default.createFile(atPath: sandbox.file("pass"), contents: nil)
            let resumed = try FlowrunBinary.run(
                ["resume", "--log-dir", sandbox.logDirectory, "--output", "plain"], in: sandbox.path, environment: sandbox.environment)
            #expect(resumed.exitStatus == 0, "\(resumed)")
            // Two runs in one second: told apart by which came first, not by their names' order.
            let runs = runFolders(in: sandbox.logDirectory).filter { !firstRun.contains($0) }
            #expect(runs.count == 1)
            let second = try RunRecordFiles(directory: sandbox.logDirectory + "/" + (runs.first ?? "none"))
            #expect(second.statuses == ["svc": "succeeded", "test": "succeeded"])
            #expect(second.events("task_started", task: "svc").count == 1, "the service ran again")
            #expect(second.finished("svc")?["reused"] == nil)
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }

        @Test func aMatrixOfServicesStartsOneServicePerMember() throws {
            let sandbox = try RunSandbox()
            let run = try sandbox.run("""
                groups:
                  replicas:
                    matrix: { n: [1, 2, 3] }
                    task:
                      service: true
                      run: echo "replica ${{ item.n }} up"; exec sleep 60
                      ready: { line: "up$" }
                tasks:
                  use:
                    needs: [replicas]
                    run: echo all ready
                """)
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            #expect(record.names("task_ready").count == 3, "\(run)")
            #expect(record.status("use") == "succeeded")
            #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
        }
    }
}

/// Mistakes in `service:` and `ready:` are reported at their line, all at once (exit 2).
@Suite struct ServiceValidationTests {
    @Test func probeMistakesAreErrorsAtTheirLine() throws {
        let directory = try TemporaryDirectory(prefix: "flowrun-service")
        let path = try directory.write("""
            tasks:
              a:
                run: echo
                ready: { tcp: "127.0.0.1:1" }
              b:
                service: true
                run: x
                ready: { tcp: "127.0.0.1:1", tiemout: 3s }
              c:
                service: true
                run: x
                ready: { line: "([a-" }
              d:
                service: true
                run: x
                ready: { tcp: "nohostport" }
              e:
                service: true
                sleep: 1s
              f:
                service: true
                run: x
                ready: { tcp: "127.0.0.1:1", run: "true" }
            """, to: "bad.yaml")
        let run = try FlowrunBinary.run(["validate", path])
        #expect(run.exitStatus == 2, "\(run)")
        let lines = run.stderr.split(separator: "\n").map { String($0).replacingOccurrences(of: directory.path + "/", with: "") }
        #expect(lines == [
            "bad.yaml:4:5: error: ready: is a service's probe; add 'service: true' to task 'a', or remove 'ready:'",
            "bad.yaml:8:34: error: unknown key 'tiemout' in ready (did you mean 'timeout'?)",
            "bad.yaml:12:20: error: ready.line is not a valid regular expression: expected ']'",
            "bad.yaml:16:19: error: ready.tcp must be HOST:PORT (like 127.0.0.1:5432 or localhost:8000), found 'nohostport'",
            "bad.yaml:18:14: error: service: true needs a 'run:' (a process that keeps running); task 'e' has no run",
            "bad.yaml:23:34: error: ready already has 'tcp'; a probe has exactly one of 'tcp', 'http', 'line' or 'run'",
            "6 errors",
        ], "\(run)")
    }

    @Test func theDryRunAndListShowServicesAndTheirProbes() throws {
        let directory = try TemporaryDirectory(prefix: "flowrun-service")
        let path = try directory.write("""
            tasks:
              db:
                service: true
                run: postgres -p 5433
                ready: { tcp: "127.0.0.1:5433", timeout: 45s }
              test:
                needs: [db]
                run: go test ./...
            """, to: "flowrun.yaml")
        let dry = try FlowrunBinary.run([path, "--dry-run"])
        #expect(dry.exitStatus == 0, "\(dry)")
        #expect(dry.stdout.contains("  db  [service]\n      ready:     tcp 127.0.0.1:5433, every 200ms, timeout 45s\n"), "\(dry)")
        let list = try FlowrunBinary.run(["list", path])
        #expect(list.stdout.contains("db    service"), "\(list)")
    }

    @Test func argoExportMakesADaemonedStepAndRefusesALineProbeAtItsLine() throws {
        let directory = try TemporaryDirectory(prefix: "flowrun-service")
        let good = try directory.write("""
            tasks:
              web:
                service: true
                run: python3 -m http.server 8000
                ready: { http: "http://localhost:8000/health" }
              test:
                needs: [web]
                run: echo test
            """, to: "good.yaml")
        let exported = try FlowrunBinary.run(["export", good, "--to", "argo"])
        #expect(exported.exitStatus == 0, "\(exported)")
        #expect(exported.stdout.contains("      daemon: true\n"), "\(exported)")
        #expect(exported.stdout.contains("        readinessProbe:\n          httpGet:\n            path: /health\n            port: \"8000\"\n"), "\(exported)")
        let bad = try directory.write("""
            tasks:
              web:
                service: true
                run: python3 -m http.server 8000
                ready: { line: "Serving HTTP" }
            """, to: "bad.yaml")
        let refused = try FlowrunBinary.run(["export", bad, "--to", "argo"])
        #expect(refused.exitStatus == 2, "\(refused)")
        #expect(refused.stderr.contains("bad.yaml:5:12: error: cannot export to Argo: a ready: {line: …} probe cannot run on Argo"), "\(refused)")
    }
}

extension RunEndToEnd.ServiceTests {
    /// `workflows/dev-loop.yaml`, run as its header says, on a free port.
    @Test func theDevLoopRecipeServesTestsAndStops() throws {
        _ = try RunSandbox.tool("python3")
        let sandbox = try RunSandbox()
        let recipe = WorkflowsTests.folder + "/dev-loop.yaml"
        let run = try FlowrunBinary.run(
            sandbox.arguments(recipe, ["--var", "port=\(try freePort())", "--var", "dir=\(WorkflowsTests.folder)/dev-loop"]),
            in: sandbox.path, environment: sandbox.environment, timeout: .seconds(60))
        #expect(run.exitStatus == 0, "\(run)")
        let record = try sandbox.record()
        #expect(record.statuses == ["serve": "succeeded", "test": "succeeded"], "\(run)")
        #expect(record.stdout("test") == "ok: 2 pages")
        #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
    }
}

extension RunEndToEnd.ServiceTests {
    /// A service from a template (`uses:`/`with:`): its probe's values filled in per call.
    @Test func aTemplateMakesServicesWithTheirOwnProbes() throws {
        let sandbox = try RunSandbox()
        let run = try sandbox.run("""
            templates:
              worker:
                params: { name: ~ }
                service: true
                run: echo "worker ${{ params.name }} up"; exec sleep 60
                ready: { line: "up$", timeout: 10s }
            tasks:
              one: { uses: worker, with: { name: one } }
              two: { uses: worker, with: { name: two } }
              use:
                needs: [one, two]
                run: echo both
            """)
        #expect(run.exitStatus == 0, "\(run)")
        let record = try sandbox.record()
        #expect(record.statuses == ["one": "succeeded", "two": "succeeded", "use": "succeeded"], "\(run)")
        #expect(Set(record.names("task_ready")) == ["one", "two"])
        #expect(sandbox.survivors().isEmpty, "\(sandbox.describeSurvivors())")
    }
}

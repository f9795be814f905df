@testable import FlowrunModel
@testable import FlowrunValues
@testable import FlowrunPlanning
import FlowrunTestSupport
import Foundation
import Testing

@Suite struct PlannerTests {
    static let nightly = """
        name: nightly
        max_parallel: 4
        timeout: 10m
        semaphores: { network: 3, db: 1 }
        vars: { bucket: nightly }
        tasks:
          prepare: { run: "mkdir -p out" }
          report: { run: "echo ${{ joins.synced.succeeded }}", needs: synced }
        groups:
          fetch:
            concurrency: 2
            timeout: 5m
            needs: [prepare]
            foreach: { range: [1, 20] }
            task: { run: "echo ${{ item }}", semaphores: { network: 2 }, timeout: 30s }
          load:
            needs: [fetch]
            tasks:
              restore: { run: "true", semaphores: [db] }
              index: { run: "true", semaphores: [db], needs: restore }
        joins:
          synced: { wait: [fetch, load], need: 1, timeout: 9m }
        finally:
          cleanup: { run: "rm -rf out" }
          notify: { run: "echo done", needs: cleanup, timeout: 10s }
        """

    @Test func stagesFollowTheDependencies() throws {
        let plan = try Planner.plan(try workflow(Self.nightly))
        #expect(plan.stages.map { $0.map(\.name) } == [
            ["prepare"], ["fetch[*]"], ["fetch"], ["restore"], ["index"], ["load"], ["synced"], ["report"],
        ])
        #expect(plan.finallySteps.map(\.name) == ["cleanup", "notify"])
    }

    @Test func eachTaskCarriesItsEffectiveLimitsAndTimers() throws {
        let plan = try Planner.plan(try workflow(Self.nightly))
        let fanOut = try #require(plan.steps.first { $0.name == "fetch[*]" })
        #expect(fanOut.kind == .fanOut)
        #expect(fanOut.fanOutCount == 20)
        #expect(fanOut.needs == ["prepare"], "members wait for their group's needs")
        #expect(fanOut.limits?.runSlots == 4)
        #expect(fanOut.limits?.group?.name == "fetch")
        #expect(fanOut.limits?.group?.concurrency == 2)
        #expect(fanOut.limits?.semaphores.map { "\($0.name) \($0.weight)/\($0.capacity)" } == ["network 2/3"])
        #expect(fanOut.timers.timeout == .seconds(30))
        #expect(fanOut.timers.groupTimeout == .seconds(300))
        #expect(fanOut.timers.runTimeout == .seconds(600))

        let fetch = try #require(plan.steps.first { $0.name == "fetch" })
        #expect(fetch.joins == ["synced"])
        #expect(plan.semaphores.map { "\($0.name): \($0.users)" } == ["network: [\"fetch[*]\"]", "db: [\"restore\", \"index\"]"])
    }

    @Test func finallyTasksHaveTheirOwnBudget() throws {
        let plan = try Planner.plan(try workflow(Self.nightly))
        #expect(plan.finallySteps.map(\.timers.timeout) == [.seconds(300), .seconds(10)])
        #expect(plan.finallySteps.allSatisfy { $0.timers.runTimeout == nil })
    }

    /// The engine takes every deadline from the plan (issue 21): the run's,
    /// and each default resolved here, http's whole-request limit included.
    @Test func thePlanResolvesEveryDeadlineTheEngineStarts() throws {
        let nightly = try Planner.plan(try workflow(Self.nightly))
        #expect(nightly.runTimeout == .seconds(600))
        let http = try Planner.plan(try workflow("""
            name: http
            tasks:
              ping: { http: { url: "http://127.0.0.1:9/" } }
              quick: { http: { url: "http://127.0.0.1:9/" }, timeout: 2s }
              plain: { run: "true" }
            finally:
              bye: { http: { url: "http://127.0.0.1:9/" } }
              bye-quick: { http: { url: "http://127.0.0.1:9/" }, timeout: 3s }
            """))
        #expect(http.runTimeout == nil)
        #expect(http.steps.map(\.timers.timeout) == [HTTPRequest.defaultTimeout, .seconds(2), nil])
        #expect(http.finallySteps.map(\.timers.timeout) == [Planner.finallyDefaultTimeout, .seconds(3)])
    }

    /// `--only` a member: its group does not run, so the plan gives it
    /// neither the group's deadline nor its slot (the engine applies neither).
    @Test func aMemberSelectedWithoutItsGroupHasNoGroupLimitOrDeadline() throws {
        let text = """
            name: only
            groups:
              g:
                concurrency: 1
                timeout: 1m
                tasks:
                  a: { run: "true" }
                  b: { run: "true" }
            """
        var options = PlanOptions()
        options.only = ["a"]
        let alone = try #require(try Planner.plan(try workflow(text), options: options).steps.first { $0.name == "a" })
        #expect(alone.limits?.group == nil)
        #expect(alone.timers.groupTimeout == nil)
        let whole = try #require(try Planner.plan(try workflow(text)).steps.first { $0.name == "a" })
        #expect(whole.limits?.group?.name == "g" && whole.limits?.group?.concurrency == 1)
        #expect(whole.timers.groupTimeout == .seconds(60))
    }

    @Test func dynamicFanOutIsMarkedAsSuch() throws {
        let plan = try Planner.plan(try workflow("""
            tasks:
              list: { run: "ls" }
            groups:
              each:
                needs: list
                foreach: ${{ tasks.list.stdout }}
                task: { run: "echo ${{ item }}" }
            """))
        let fanOut = try #require(plan.steps.first { $0.kind == .fanOut })
        #expect(fanOut.fanOutCount == nil)
        #expect(plan.text.contains("member count known at run time (each[*])"))
        #expect(plan.text.contains("${{ tasks.list.stdout }} (read at run time)"))
    }

    @Test func onlySelectsTheNamedStepsAndWhatTheyNeed() throws {
        var options = PlanOptions()
        options.only = ["load"]
        let plan = try Planner.plan(try workflow(Self.nightly), options: options)
        #expect(plan.steps.map(\.name) == ["prepare", "fetch[*]", "fetch", "restore", "index", "load"])
    }

    @Test func commandLineOverrides() throws {
        var options = PlanOptions()
        options.variables = [("bucket", "weekly")]
        options.maxParallel = 9
        options.failFast = true
        let plan = try Planner.plan(try workflow(Self.nightly), options: options)
        #expect(plan.workflow.vars.map(\.value) == ["weekly"])
        #expect(plan.maxParallel == 9)
        #expect(plan.workflow.failFast)
    }

    @Test func unknownVariableOrOnlyNameIsACommandLineError() throws {
        let workflow = try workflow(Self.nightly)
        var options = PlanOptions()
        options.variables = [("buckt", "x")]
        #expect(throws: PlanningError.self) { try Planner.plan(workflow, options: options) }
        do {
            _ = try Planner.plan(workflow, options: options)
        } catch {
            #expect(error.message == "--var buckt=…: the workflow declares no variable 'buckt' (did you mean 'bucket'?)")
        }
        options = PlanOptions()
        options.only = ["lod"]
        do {
            _ = try Planner.plan(workflow, options: options)
            Issue.record("--only lod should fail")
        } catch {
            #expect(error.message == "--only lod: no task, group or join has that name (did you mean 'load'?)")
        }
    }

    @Test func maxParallelDefaultsToTheCPUCount() throws {
        let plan = try Planner.plan(try workflow("tasks: { a: { sleep: 0 } }"))
        #expect(plan.maxParallel == Planner.cpuCount)
        #expect(plan.text.contains("max_parallel \(Planner.cpuCount) (CPU count)"))
    }

    @Test func jsonPlanHasTheDocumentedShape() throws {
        let plan = try Planner.plan(try workflow(Self.nightly))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(plan.json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["schema", "dry_run", "workflow", "semaphores", "only", "stages", "steps", "finally"])
        #expect(object["schema"] as? String == "flowrun-plan/1")
        let steps = try #require(object["steps"] as? [[String: Any]])
        let fanOut = try #require(steps.first { $0["name"] as? String == "fetch[*]" })
        #expect(fanOut["kind"] as? String == "fan-out")
        #expect((fanOut["fan_out"] as? [String: Any])?["count"] as? Int == 20)
        #expect((fanOut["limits"] as? [String: Any])?["run"] as? Int == 4)
        let join = try #require(steps.first { $0["name"] as? String == "synced" })
        #expect(join["need"] as? String == "1")
        #expect(join["required"] as? Int == 1)
        #expect(join["timeout_seconds"] as? Double == 540)
    }
}

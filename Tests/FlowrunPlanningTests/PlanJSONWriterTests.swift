@testable import FlowrunModel
@testable import FlowrunPlanning
import FlowrunTestSupport
import Foundation
import Testing

/// `--dry-run --output json` is written by `PrettyJSONWriter`, not
/// Foundation's `JSONEncoder` (a quarter of the command's time on a
/// 2,000-task file): byte for byte what the encoder wrote, on every recipe
/// and on plans that use every key, odd characters and numbers.
@Suite struct PlanJSONWriterTests {
    static let recipes: [String] = {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("workflows").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { folder + "/" + $0 }
    }()

    @Test func everyRecipesPlanIsWrittenAsTheEncoderWroteIt() throws {
        var compared = 0
        for file in Self.recipes {
            guard let workflow = workflow(atPath: file), let plan = try? Planner.plan(workflow) else { continue }
            let written = plan.json
            #expect(written == plan.jsonThroughFoundation, "\(file): \(Self.firstDifference(written, plan.jsonThroughFoundation))")
            compared += 1
        }
        #expect(compared >= 10, "only \(compared) of \(Self.recipes.count) recipes planned")
    }

    /// Every key of the plan JSON, and strings the escaping treats apart:
    /// quotes, backslashes, slashes, tabs, DEL, U+0085 and U+009B (C1), U+00A0
    /// (which shares C1's first byte), other controls, non-ASCII.
    static let everyKey = #"""
        name: "every \"key\" / \\ é"
        description: "tab\there, del \u007F, nel \u0085, csi \u009B, nbsp \u00A0, bell \u0007, esc \u001B, ff \f, bs \b, cr \r."
        timeout: 1h30m
        fail_fast: true
        kill_grace: 2500ms
        max_parallel: 3
        semaphores: { db: 2, "batch-*": 1 }
        vars: { zeta: "1", alpha: "two words", commit: { sh: "git rev-parse HEAD" }, Upper: x, _under: y }
        env: { B: "${{ vars.alpha }}", A: plain, a: lower }
        templates:
          greet: { params: { who: ~, greeting: hello }, run: 'echo "${{ params.greeting }} ${{ params.who }}"' }
        tasks:
          fetch:
            description: "Fetches\nthings"
            http: { url: "https://user:secret@example.com/a/b?x=1", method: POST, headers: { Z-Last: z, A-First: "a/b" }, body: '{"k": 1}', expect: 201 }
            timeout: 0.25s
            retries: 2
            retry_delay: 1.5s
            backoff: 2.5
          nap: { sleep: 10ms..2s, continue_on_error: true, aliases: [rest, doze] }
          exact: { sleep: 3s, when: always, needs: [fetch] }
          build:
            run: |
              #!/usr/bin/env python3
              print("hi")
            env: { PATH_X: "/usr/bin:${{ vars.zeta }}", EMPTY: "" }
            cwd: "sub/${{ vars.alpha }}"
            if: ${{ vars.zeta == '1' && startsWith(vars.alpha, 'two') }}
            resources: { cpus: 0.5, memory: 1.5GiB }
            retry_resources: { memory: x1.5 }
            sources: ["src/**/*.c", "include/*.h"]
            generates: [out/app]
            semaphores: { db: 2 }
            prompt: "Really?"
          shelled: { run: "echo ${{ host.arch }} ${{ vars.commit }}", shell: [bash, -euo, pipefail, -c] }
          hello: { uses: greet, with: { who: "wörld" }, aliases: hi }
          web:
            service: true
            run: python3 -m http.server 8000
            ready: { http: "http://127.0.0.1:8000/health", status: 204, timeout: 20s, interval: 250ms }
          db: { service: true, run: "sleep 60", ready: { tcp: "127.0.0.1:5432" } }
          logline: { service: true, run: "sleep 60", ready: { line: "listening on \\d+" } }
          probe-run: { service: true, run: "sleep 60", ready: { run: "true" } }
          after-web: { run: "true", needs: [web, db, logline, probe-run] }
        groups:
          matrix:
            needs: [build]
            concurrency: 2
            timeout: 10m
            matrix: { os: [linux, "mac os"], py: ["3.10", "3.12"], include: [{ os: linux, py: "3.13", extra: { deep: [1, "two", { k: v }] } }] }
            task: { run: "echo ${{ item.os }} ${{ item.py }}", name: "m-${{ item.os }}-${{ item.py }}" }
          listed:
            foreach: [a, "b c", "d\"e"]
            sequential: true
            task: { run: "echo ${{ item }}", semaphores: ["batch-${{ item }}"] }
          ranged:
            foreach: { range: [1, 5] }
            task: { run: "echo ${{ item }}" }
          lines:
            needs: [fetch]
            foreach: ${{ tasks.fetch.stdout }}
            task: { run: "echo ${{ item }}" }
          split-up:
            foreach: ${{ vars.alpha }}
            split: " "
            task: { run: "echo ${{ item }}" }
          plain-group:
            if: ${{ vars.zeta != '2' }}
            when: always
            aliases: [pg]
            sequential: true
            tasks:
              one: { run: "true" }
              two: { run: "true" }
        joins:
          both:
            description: "both of them"
            wait: [nap, exact]
            need: any
            timeout: 90s
            on_timeout: continue
            report: [nap.stdout, exact.outputs.KEY]
        finally:
          cleanup: { run: "rm -rf tmp", timeout: 12s }
        """#

    @Test func everyKeyAndOddCharactersAreWrittenAsTheEncoderWroteThem() throws {
        let result = validated(Self.everyKey)
        let workflow = try #require(result.workflow, "\(result.diagnostics)")
        let plan = try Planner.plan(workflow)
        let written = plan.json
        #expect(written == plan.jsonThroughFoundation, "\(Self.firstDifference(written, plan.jsonThroughFoundation))")
        // The comparison above would pass were both empty: the document is the real one.
        for needle in [#""type" : "http""#, #""method" : "POST""#, #""ready" : {"#, #""members" : ["#, #""values" : ["#, #""capacity" : {"#, #""computed_vars" : {"#,
                       #"\u007f"#, #"\u0085"#, #"\u009b"#, #"\u0007"#, #"\t"#, #""fan_out" : {"#, #""uses" : {"#, #""aliases" : ["#,
                       #""report" : ["#, #""runs_after" : "#, #""shell" : ["#, #""shebang" : "#, #""min_seconds" : 0.01"#, #""backoff" : 2.5"#] {
            #expect(written.contains(needle), "no \(needle) in the plan JSON")
        }
    }

    /// A secret's value is masked inside the JSON's strings either way.
    @Test func aSecretIsMaskedAsBefore() throws {
        let result = validated("""
            secrets: [TOKEN]
            vars: { TOKEN: "s3cr3t/\\"quoted\\"" }
            tasks:
              a: { run: "echo ${{ vars.TOKEN }} s3cr3t", env: { T: "${{ vars.TOKEN }}" } }
            """)
        let plan = try Planner.plan(try #require(result.workflow, "\(result.diagnostics)"))
        #expect(plan.json == plan.jsonThroughFoundation)
    }

    /// The writer on its own: numbers as the encoder writes them.
    @Test func numbersAreWrittenAsTheEncoderWritesThem() throws {
        let values: [Double] = [0, 1, 2.5, 0.1, 1e-5, 123456789.125, 1e16, 1e300, Double.leastNonzeroMagnitude, 300, -0.0, 86400.001]
        struct Box: Encodable { var values: [Double]; var count: Int; var big: UInt64; var yes: Bool }
        let box = Box(values: values, count: -42, big: UInt64.max, yes: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let expected = String(decoding: try encoder.encode(box), as: UTF8.self)
        var writer = PrettyJSONWriter()
        writer.object { writer in
            writer.key("big"); writer.uint(box.big)
            writer.key("count"); writer.int(box.count)
            writer.key("values"); writer.array { writer in for value in values { writer.element(); writer.double(value) } }
            writer.key("yes"); writer.bool(true)
        }
        #expect(writer.text == expected)
        var refused = PrettyJSONWriter()
        refused.double(.nan)
        #expect(refused.failed, "the encoder refuses NaN: the writer must say so")
    }

    /// Where two texts first differ, for a readable failure.
    static func firstDifference(_ a: String, _ b: String) -> String {
        let x = Array(a.utf8), y = Array(b.utf8)
        let index = zip(x, y).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(x.count, y.count)
        let around = { (bytes: [UInt8]) in String(decoding: bytes[max(0, index - 80)..<min(bytes.count, index + 80)], as: UTF8.self) }
        return "at byte \(index) of \(x.count)/\(y.count):\n\(around(x))\n---\n\(around(y))"
    }
}

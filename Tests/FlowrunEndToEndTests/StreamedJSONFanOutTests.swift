import Foundation
import Testing

extension RunEndToEndParallel {
    /// Issue 20 item 1: a stdout over 1 MiB that is one JSON array feeds a
    /// fan-out element by element (never parsed whole), objects included;
    /// one that only looks like an array is read as lines, as a short one is.
    @Suite struct StreamedJSONFanOutTests {
        static let members = 60_000

        @Test func aJSONArrayOverOneMebibyteFeedsOneMemberPerElement() throws {
            let sandbox = try RunSandbox()
            // `{"k":N,"pad":"…"}` × 60,000 is about 2.6 MB: kept whole on disk, beside the log.
            let run = try sandbox.run("""
                max_parallel: 8
                tasks:
                  list:
                    run: |
                      printf '[\\n'
                      seq 1 \(Self.members) | sed 's/.*/{"k":&,"pad":"abcdefghij, [x] {y}"},/' | sed '$ s/,$//'
                      printf ']\\n'
                groups:
                  work:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      name: m-${{ item.k }}
                      sleep: 0s
                """, timeout: .seconds(600))
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let counts = record.summary["counts"] as? [String: Any]
            #expect(counts?["succeeded"] as? Int == Self.members + 1, "counts: \(counts ?? [:])")
            let group = try #require(record.group("work"))
            let names = group["members"] as? [String] ?? []
            #expect(names.count == Self.members && names.first == "m-1" && names.last == "m-\(Self.members)", "\(names.prefix(3)) … \(names.suffix(3))")
            #expect(Set(names).count == Self.members)
        }

        @Test func aLongStdoutThatIsNotOneArrayIsReadAsLines() throws {
            let sandbox = try RunSandbox()
            // Starts like an array but the lines are not one JSON value: 120,000 lines, ~1.3 MB.
            let run = try sandbox.run("""
                max_parallel: 8
                tasks:
                  list:
                    run: |
                      echo '['
                      seq 1 120000
                groups:
                  work:
                    needs: [list]
                    foreach: ${{ tasks.list.stdout }}
                    task:
                      sleep: 0s
                """, timeout: .seconds(600))
            #expect(run.exitStatus == 0, "\(run)")
            let record = try sandbox.record()
            let counts = record.summary["counts"] as? [String: Any]
            #expect(counts?["succeeded"] as? Int == 120_001 + 1, "counts: \(counts ?? [:])")
            let group = try #require(record.group("work"))
            let items = group["items"] as? [String] ?? []
            #expect(items.first == "[" && items.last == "120000", "\(items.prefix(2)) … \(items.suffix(2))")
        }
    }
}

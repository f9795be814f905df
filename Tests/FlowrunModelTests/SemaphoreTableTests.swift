@testable import FlowrunModel
import Testing

/// `SemaphoreTable`: which pool a name takes, and which families overlap.
@Suite struct SemaphoreTableTests {
    static let here = SourceLocation(file: "w.yaml", line: 1, column: 1)

    @Test(arguments: [
        ("batch-*", "batch-a", true), ("batch-*", "batch-", true), ("batch-*", "batch", false),
        ("*-gpu", "a-gpu", true), ("*-gpu", "a-gpu-b", false), ("a*b*c", "aXbYbZc", true), ("a*b*c", "acb", false),
        ("*", "", true), ("db", "db", true), ("db", "dbx", false),
    ])
    func aStarIsAnyRunOfCharacters(pattern: String, name: String, matches: Bool) {
        #expect(SemaphoreTable.matches(pattern, name) == matches)
    }

    @Test(arguments: [
        ("batch-*", "batch-gpu-*", true), ("a-*", "*-b", true), ("a-*", "b-*", false), ("*-x", "*-y", false),
        ("batch-*", "batch-a", true), ("bacth-*", "batch-*", false), ("a*c", "ab*", true), ("a*c", "*d", false),
    ])
    func familiesOverlapWhenSomeNameMatchesBoth(first: String, second: String, overlaps: Bool) {
        #expect(SemaphoreTable.overlaps(first, second) == overlaps)
        #expect(SemaphoreTable.overlaps(second, first) == overlaps)
    }

    @Test func aLiteralNameWinsOverItsFamily() {
        let table = SemaphoreTable([
            SemaphoreDeclaration(name: "db-*", capacity: 3, location: Self.here),
            SemaphoreDeclaration(name: "db-main", capacity: 1, location: Self.here),
        ])
        #expect(table.pool(named: "db-main") == .init(name: "db-main", capacity: 1, family: nil))
        #expect(table.pool(named: "db-eu") == .init(name: "db-eu", capacity: 3, family: "db-*"))
        #expect(table.pool(named: "cache") == nil)
        #expect(table.candidates(forPattern: "db-*").map(\.name) == ["db-main", "db-*"])
        #expect(table.candidates(forPattern: "cache-*").isEmpty)
    }
}

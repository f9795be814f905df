@testable import FlowrunValues
import Testing

/// `String(joining:)`: the parts in order, whatever their sizes and scripts.
@Suite struct JoinedStringTests {
    @Test(arguments: [
        ["", "", ""],
        ["KEY", "=", "value"],
        ["/proc/123/fd/7/logs/", "000", "/", "000042-東京", ".log"],
        [String(repeating: "a", count: 300), "é", String(repeating: "🙂", count: 40)],
        ["only one"],
    ])
    func theResultIsThePartsInOrder(_ parts: [String]) {
        let joined: String
        switch parts.count {
        case 1: joined = String(joining: parts[0])
        case 3: joined = String(joining: parts[0], parts[1], parts[2])
        default: joined = String(joining: parts[0], parts[1], parts[2], parts[3], parts[4])
        }
        #expect(joined == parts.joined())
        #expect(joined.utf8.count == parts.reduce(0) { $0 + $1.utf8.count })
    }
}

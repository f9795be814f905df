/// Finding a range member by its name (issue 31): `flowrun w.yaml m-9999999`
/// must not render 10,000,000 names to find one.
extension MemberNaming {
    /// The index of the member of a `range` fan-out (first item `low`,
    /// `count` items) whose `name:` renders to `name`, solved from the
    /// name rather than by rendering every member; nil when none does.
    /// The first such member when several share the name.
    package static func rangeMember(named name: String, template: Template, low: Int, count: Int, vars: [Variable]) -> Int? {
        // A name that would not be kept (empty, a NUL byte, over 1 MiB) is GROUP[INDEX] instead.
        guard !name.isEmpty, !name.utf8.contains(0), name.utf8.count <= maximumLength, count > 0 else { return nil }
        var pieces: [RangeNamePiece] = []
        for segment in template.segments {
            switch segment {
            case .text(let text):
                pieces.append(.literal(Array(text.utf8)))
            case .expression(.operand(let operand), _):
                switch operand.path {
                case .item: pieces.append(.item)
                case .itemField(let path): if path.isEmpty { pieces.append(.item) }  // a text item has no fields: ''
                case .index: pieces.append(.index)
                case .variable(let variable): pieces.append(.literal(Array((vars.last { $0.name == variable }?.value ?? "").utf8)))
                default: return nil
                }
            case .expression:
                return nil
            }
        }
        let solver = RangeNameSolver(name: Array(name.utf8), pieces: pieces, low: low, count: count)
        return solver.solve(piece: 0, at: 0, index: nil)
    }
}

/// One part of a range member's `name:`: fixed text, or a number.
private enum RangeNamePiece {
    case literal([UInt8])
    /// The item: `low + index`, in decimal.
    case item
    case index
}

/// Matches a name against a range's `name:` pieces, each number written
/// as `String(Int)` writes it (a `-`, then digits without a leading zero).
private struct RangeNameSolver {
    var name: [UInt8]
    var pieces: [RangeNamePiece]
    var low: Int
    var count: Int

    func solve(piece: Int, at position: Int, index: Int?) -> Int? {
        guard piece < pieces.count else {
            guard position == name.count else { return nil }
            // No number in the name: every member has it, the first wins.
            return index ?? 0
        }
        switch pieces[piece] {
        case .literal(let text):
            guard name.count - position >= text.count, name[position..<(position + text.count)].elementsEqual(text) else { return nil }
            return solve(piece: piece + 1, at: position + text.count, index: index)
        case .item, .index:
            var end = position
            if end < name.count, name[end] == UInt8(ascii: "-") { end += 1 }
            let digitsStart = end
            var found: Int?
            while end < name.count, name[end] >= UInt8(ascii: "0"), name[end] <= UInt8(ascii: "9") {
                end += 1
                // A leading zero is a number only alone ("0", never "-0" nor "07").
                if name[digitsStart] == UInt8(ascii: "0") && end - digitsStart > 1 { break }
                guard let value = Int(String(decoding: name[position..<end], as: UTF8.self)),
                      String(value).utf8.count == end - position else { continue }
                let candidate: Int
                if case .item = pieces[piece] {
                    let offset = value.subtractingReportingOverflow(low)
                    guard !offset.overflow else { continue }
                    candidate = offset.partialValue
                } else {
                    candidate = value
                }
                guard candidate >= 0, candidate < count, index == nil || index == candidate else { continue }
                if let solved = solve(piece: piece + 1, at: end, index: candidate) {
                    found = min(found ?? .max, solved)
                }
            }
            return found
        }
    }
}

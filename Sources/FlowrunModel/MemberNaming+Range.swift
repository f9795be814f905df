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
        var solver = RangeNameSolver(pieces: pieces, low: low, count: count)
        // Longer than any member's name can be: refused before a byte of it is read.
        guard name.utf8.count <= solver.longestName else { return nil }
        solver.name = Array(name.utf8)
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
///
/// A number is read digit by digit into an `Int` and given up as soon as
/// it leaves what the piece can be (past the range's ends, or out of
/// `Int`): each further digit only moves it further out. So a number is
/// never more than 20 bytes of the name, and a long run of digits costs
/// what its first few do (issue 31: 130,000 digits took 9 s).
private struct RangeNameSolver {
    var name: [UInt8] = []
    var pieces: [RangeNamePiece]
    var low: Int
    var count: Int

    /// The smallest and largest value a number piece can be.
    private func bounds(of piece: RangeNamePiece) -> ClosedRange<Int> {
        switch piece {
        case .item: return low...(low + (count - 1))
        case .index, .literal: return 0...(count - 1)
        }
    }

    /// The longest name the pieces can make: longer names are no member's.
    var longestName: Int {
        pieces.reduce(0) { total, piece in
            switch piece {
            case .literal(let text): return total + text.count
            case .item, .index:
                let bounds = bounds(of: piece)
                return total + max(String(bounds.lowerBound).utf8.count, String(bounds.upperBound).utf8.count)
            }
        }
    }

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
            let bounds = bounds(of: pieces[piece])
            var end = position
            let negative = end < name.count && name[end] == UInt8(ascii: "-")
            if negative { end += 1 }
            let digitsStart = end
            var value = 0
            var found: Int?
            while end < name.count, name[end] >= UInt8(ascii: "0"), name[end] <= UInt8(ascii: "9") {
                let digit = Int(name[end] - UInt8(ascii: "0"))
                end += 1
                // A leading zero is a number only alone ("0", never "-0" nor "07").
                if name[digitsStart] == UInt8(ascii: "0") && (negative || end - digitsStart > 1) { break }
                // Negative numbers are built downwards, so Int.min is read too.
                let shifted = value.multipliedReportingOverflow(by: 10)
                let next = negative ? shifted.partialValue.subtractingReportingOverflow(digit) : shifted.partialValue.addingReportingOverflow(digit)
                guard !shifted.overflow, !next.overflow else { break }
                value = next.partialValue
                // More digits only move the number further from zero.
                if negative ? value < bounds.lowerBound : value > bounds.upperBound { break }
                guard bounds.contains(value) else { continue }
                let candidate = if case .item = pieces[piece] { value - low } else { value }
                guard index == nil || index == candidate else { continue }
                if let solved = solve(piece: piece + 1, at: end, index: candidate) {
                    found = min(found ?? .max, solved)
                }
            }
            return found
        }
    }
}

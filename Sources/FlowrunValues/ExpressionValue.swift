import FlowrunModel

/// A value an expression yields at run time: text, a number, a boolean, or JSON text.
///
/// The rules (docs/FORMAT.md §9 states them for users):
///
/// **As text** (what `${{ }}` inserts): text as is; numbers in plain decimal,
/// as a person writes them — `0`, `-3`, `1.5`, `0.00001`, never `1.0` or
/// `1e-05`; booleans `true` / `false`; JSON (`groups.G.results`) as its
/// compact text.
///
/// **Reads as a number**: a number does; text does when, after trimming
/// spaces, tabs, CR and LF, it is `[+-]?DIGITS[.DIGITS][(e|E)[+-]DIGITS]` and
/// finite — so `0`, ` 42\n`, `-1.5`, `1e3`, but not the empty text, `0x10`,
/// `1.`, `.5`, `nan`, `inf` or `1_000`. A boolean never does.
///
/// **Comparisons** (`==` `!=` `<` `<=` `>` `>=`): when both sides read as
/// numbers they compare numerically (so an output `"0"` equals `0`, and
/// `"10" > "9"`); otherwise both sides compare as text, byte by byte in UTF-8
/// (case-sensitive, no Unicode normalisation; the order of `LC_ALL=C sort`).
/// Ordering text is not an error: ISO dates and times order correctly. Booleans compare as the text `true` / `false`, so
/// `joins.J.timed_out == 'true'` and `== true` both work and `true == 1` is
/// false. Caveat: two texts that both read as numbers compare as numbers,
/// so `'1.10' == '1.1'`.
///
/// **Truthiness** (`if:`, `&&`, `||`, `!`): false is `false`, the number 0,
/// and text that after trimming is empty, `false` in any letter case, or reads
/// as a number equal to 0 (`0`, `0.0`, `-0`). Everything else is true,
/// including `no`, `off` and `null`.
package enum ExpressionValue: Sendable, Hashable {
    case string(String)
    case number(Double)
    case boolean(Bool)
    /// Compact JSON text (`groups.G.results`). It behaves exactly like text;
    /// the case exists so a run record can embed it as JSON, not as a string.
    case json(String)

    /// The value inserted into a template.
    package var text: String {
        switch self {
        case .string(let text), .json(let text): return text
        case .number(let number): return Self.text(of: number)
        case .boolean(let value): return value ? "true" : "false"
        }
    }

    /// The number this value reads as, if any (see the rules above).
    package var numericValue: Double? {
        switch self {
        case .number(let number): return number
        case .boolean: return nil
        case .string(let text), .json(let text): return Self.number(reading: text)
        }
    }

    /// Truthiness, as `if:` and the logical operators see it.
    package var isTrue: Bool {
        switch self {
        case .boolean(let value): return value
        case .number(let number): return number != 0 && !number.isNaN
        case .string(let text), .json(let text): return Self.isTrue(text)
        }
    }
}

// MARK: - Text → number, truthiness

extension ExpressionValue {
    /// Reads `text` as a decimal number: `[+-]?D+(.D+)?([eE][+-]?D+)?` between
    /// ASCII whitespace. Stricter than `Double(_:)`, which also takes hex,
    /// `nan` and `inf` — none of which a user means as a number here.
    static func number(reading text: String) -> Double? {
        var utf8 = Substring(text).utf8
        while let first = utf8.first, isSpace(first) { utf8.removeFirst() }
        while let last = utf8.last, isSpace(last) { utf8.removeLast() }
        guard !utf8.isEmpty, isDecimal(utf8) else { return nil }
        guard let value = Double(Substring(utf8)), value.isFinite else { return nil }
        return value
    }

    private static func isTrue(_ text: String) -> Bool {
        var utf8 = Substring(text).utf8
        while let first = utf8.first, isSpace(first) { utf8.removeFirst() }
        while let last = utf8.last, isSpace(last) { utf8.removeLast() }
        if utf8.isEmpty { return false }
        if utf8.count == 5, utf8.elementsEqual("false".utf8, by: { $0 | 0x20 == $1 }) { return false }
        if let number = number(reading: text), number == 0 { return false }
        return true
    }

    package static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// The decimal grammar above, on bytes already trimmed.
    private static func isDecimal(_ bytes: Substring.UTF8View) -> Bool {
        var index = bytes.startIndex
        func digits() -> Int {
            var count = 0
            while index < bytes.endIndex, (0x30...0x39).contains(bytes[index]) {
                count += 1
                index = bytes.index(after: index)
            }
            return count
        }
        func skip(_ allowed: Set<UInt8>) {
            if index < bytes.endIndex, allowed.contains(bytes[index]) { index = bytes.index(after: index) }
        }
        skip([0x2B, 0x2D])  // + -
        guard digits() > 0 else { return false }
        if index < bytes.endIndex, bytes[index] == 0x2E {  // .
            index = bytes.index(after: index)
            guard digits() > 0 else { return false }
        }
        if index < bytes.endIndex, bytes[index] | 0x20 == 0x65 {  // e E
            index = bytes.index(after: index)
            skip([0x2B, 0x2D])
            guard digits() > 0 else { return false }
        }
        return index == bytes.endIndex
    }
}

// MARK: - Number → text

extension ExpressionValue {
    /// Plain decimal: `0`, `-3`, `1.5`, `0.00001`, `100000000000000000000`.
    ///
    /// Swift's shortest round-trip digits, with any exponent written out,
    /// because the text lands in shell scripts and file names where `1e-05`
    /// surprises. Integral values print without `.0`; `-0` prints as `0`.
    static func text(of number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        if number == 0 { return "0" }
        if number == number.rounded(), abs(number) < 1e18 { return String(Int64(number)) }
        let shortest = String(number)  // e.g. "1.5", "1e-05", "1.2345e+20"
        guard let exponentMark = shortest.firstIndex(where: { $0 == "e" || $0 == "E" }) else { return shortest }
        guard let exponent = Int(shortest[shortest.index(after: exponentMark)...]) else { return shortest }
        var mantissa = shortest[..<exponentMark]
        let negative = mantissa.hasPrefix("-")
        if negative { mantissa = mantissa.dropFirst() }
        let pointOffset = mantissa.firstIndex(of: ".").map { mantissa.distance(from: mantissa.startIndex, to: $0) } ?? mantissa.count
        var digits = Array(mantissa.filter { $0 != "." })
        while digits.count > 1, digits.last == "0" { digits.removeLast() }
        let point = pointOffset + exponent  // digits before the decimal point
        var result = negative ? "-" : ""
        if point <= 0 {
            result += "0." + String(repeating: "0", count: -point) + String(digits)
        } else if point >= digits.count {
            result += String(digits) + String(repeating: "0", count: point - digits.count)
        } else {
            result += String(digits[..<point]) + "." + String(digits[point...])
        }
        return result
    }
}

// MARK: - Comparison

extension ExpressionValue {
    /// How two values relate under the comparison rules above.
    enum Order {
        case less, equal, greater
        /// Only NaN, which no user-written value reads as.
        case unordered
    }

    static func order(_ left: ExpressionValue, _ right: ExpressionValue) -> Order {
        if let a = left.numericValue, let b = right.numericValue {
            if a < b { return .less }
            if a > b { return .greater }
            return a == b ? .equal : .unordered
        }
        let a = left.text.utf8, b = right.text.utf8
        if a.elementsEqual(b) { return .equal }
        return a.lexicographicallyPrecedes(b) ? .less : .greater
    }

    /// Applies a comparison operator; `&&` and `||` are the evaluator's (they short-circuit).
    static func compare(_ left: ExpressionValue, _ op: BinaryOperator, _ right: ExpressionValue) -> Bool {
        let order = order(left, right)
        switch op {
        case .equal: return order == .equal
        case .notEqual: return order != .equal
        case .less: return order == .less
        case .lessOrEqual: return order == .less || order == .equal
        case .greater: return order == .greater
        case .greaterOrEqual: return order == .greater || order == .equal
        case .and: return left.isTrue && right.isTrue
        case .or: return left.isTrue || right.isTrue
        }
    }
}

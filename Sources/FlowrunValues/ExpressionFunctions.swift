package import FlowrunModel

/// Why a function could not give a value at run time.
package struct ExpressionFunctionError: Error, Sendable {
    package var message: String
}

/// What each `ExpressionFunction` does (docs/FORMAT.md §9, "Functions").
///
/// Arrays and objects are `.json` values (what `fromJSON()`, `split()` and
/// `groups.G.results` give); any other value is one item. Text matching is
/// case-insensitive where GitHub's is (`contains`, `startsWith`, `endsWith`);
/// element equality is flowrun's `==`.
package enum ExpressionFunctions {
    package static func apply(_ function: ExpressionFunction, _ arguments: [ExpressionValue]) throws(ExpressionFunctionError) -> ExpressionValue {
        switch function {
        case .format: return .string(try format(arguments[0].text, Array(arguments.dropFirst())))
        case .join:
            let separator = arguments.count > 1 ? arguments[1].text : ","
            guard let items = arguments[0].arrayItems else { return .string(arguments[0].text) }
            return .string(items.map(\.text).joined(separator: separator))
        case .contains:
            if let items = arguments[0].arrayItems {
                return .boolean(items.contains { ExpressionValue.order($0, arguments[1]) == .equal })
            }
            return .boolean(foldedBytes(arguments[0].text).contains(foldedBytes(arguments[1].text)))
        case .startsWith: return .boolean(foldedBytes(arguments[0].text).starts(with: foldedBytes(arguments[1].text)))
        case .endsWith: return .boolean(foldedBytes(arguments[0].text).reversed().starts(with: foldedBytes(arguments[1].text).reversed()))
        case .toJSON: return .string(arguments[0].json.compactText)
        case .fromJSON:
            let text = arguments[0].text
            guard let document = JSONValue.parse(text) else {
                throw ExpressionFunctionError(message: "fromJSON(): the value is not JSON: \(preview(text))")
            }
            return ExpressionValue(document)
        case .replace:
            let old = arguments[1].text
            guard !old.isEmpty else { return .string(arguments[0].text) }
            return .string(arguments[0].text.replacing(old, with: arguments[2].text))
        case .split:
            let text = arguments[0].text, separator = arguments[1].text
            guard !text.isEmpty else { return .json("[]") }
            let pieces = separator.isEmpty ? [Substring(text)] : text.split(separator: separator, omittingEmptySubsequences: false)
            return ExpressionValue(.array(pieces.map { .string(String($0)) }))
        case .trim:
            let text = arguments[0].text
            guard let first = text.firstIndex(where: { !$0.isWhitespace }), let last = text.lastIndex(where: { !$0.isWhitespace }) else { return .string("") }
            return .string(String(text[first...last]))
        }
    }

    /// `format('{0}-{1}', a, b)`.
    static func format(_ text: String, _ values: [ExpressionValue]) throws(ExpressionFunctionError) -> String {
        let format: ExpressionFormat
        do { format = try ExpressionFormat(text) } catch {
            throw ExpressionFunctionError(message: "format(): \(error.message), in \(preview(text))")
        }
        var result = ""
        for part in format.parts {
            switch part {
            case .text(let literal): result += literal
            case .argument(let index):
                guard index < values.count else {
                    throw ExpressionFunctionError(message: "format(): {\(index)} but only \(values.count) value\(values.count == 1 ? "" : "s") after the text")
                }
                result += values[index].text
            }
        }
        return result
    }

    /// Case-insensitive matching, as GitHub's ordinal-ignore-case: both sides lower-cased.
    private static func foldedBytes(_ text: String) -> [UInt8] {
        Array(text.lowercased().utf8)
    }

    private static func preview(_ text: String) -> String {
        let shown = text.count > 60 ? String(text.prefix(60)) + "…" : text
        return "'\(shown)'"
    }
}

extension ExpressionValue {
    /// A JSON document's value: strings, numbers and booleans as themselves,
    /// null as `''` (GitHub's null reads as ''), arrays and objects as `.json`.
    init(_ document: JSONValue) {
        switch document {
        case .string(let text): self = .string(text)
        case .number(let text): self = Double(text).map(ExpressionValue.number) ?? .string(text)
        case .bool(let flag): self = .boolean(flag)
        case .null: self = .string("")
        case .array, .object: self = .json(document.compactText)
        }
    }

    /// The items when the value is a JSON array.
    package var arrayItems: [ExpressionValue]? {
        guard case .json(let text) = self, text.utf8.first == UInt8(ascii: "["), case .array(let items)? = JSONValue.parse(text) else { return nil }
        return items.map(ExpressionValue.init)
    }

    /// The value as a JSON document (`toJSON()`).
    var json: JSONValue {
        switch self {
        case .string(let text): return .string(text)
        case .number(let number): return number.isFinite ? .number(Self.text(of: number)) : .string(Self.text(of: number))
        case .boolean(let flag): return .bool(flag)
        case .json(let text): return JSONValue.parse(text) ?? .string(text)
        }
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in the bytes (the empty needle always does).
    fileprivate func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= count else { return false }
        for start in 0...(count - needle.count) where self[start] == needle[0] {
            if self[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }
}

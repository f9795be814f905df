/// YAML 1.2 core-schema readings of plain scalars. Quoted scalars are always
/// strings, so `"true"` and `"8"` never become a boolean or a number.
extension YAMLScalar {
    /// `true`/`True`/`TRUE` or `false`/`False`/`FALSE`; YAML 1.1's `yes`/`no`/`on`/`off` stay strings.
    public var bool: Bool? {
        guard style == .plain else { return nil }
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: return nil
        }
    }

    /// A decimal integer (`12`, `-3`, `+4`), `0o17` or `0x1F`; nil when it
    /// does not fit an `Int`.
    public var int: Int? {
        guard style == .plain else { return nil }
        let utf8 = Substring(text).utf8
        if utf8.starts(with: "0x".utf8) {
            let digits = utf8.dropFirst(2)
            guard !digits.isEmpty, digits.allSatisfy(Self.isHexDigit) else { return nil }
            return Int(Substring(digits), radix: 16)
        }
        if utf8.starts(with: "0o".utf8) {
            let digits = utf8.dropFirst(2)
            guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x37).contains($0) }) else { return nil }
            return Int(Substring(digits), radix: 8)
        }
        let digits = utf8.first == UInt8(ascii: "-") || utf8.first == UInt8(ascii: "+") ? utf8.dropFirst() : utf8[...]
        guard !digits.isEmpty, digits.allSatisfy(Self.isDigit) else { return nil }
        return Int(text)
    }

    /// A number in the core schema's float or int forms, including `.inf` and `.nan`.
    public var double: Double? {
        guard style == .plain else { return nil }
        if let int { return Double(int) }
        switch text {
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .infinity
        case "-.inf", "-.Inf", "-.INF": return -.infinity
        case ".nan", ".NaN", ".NAN": return .nan
        default: break
        }
        guard isCoreFloat else { return nil }
        return Double(text)
    }

    /// Matches `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`,
    /// which also covers decimal integers too large for `Int`.
    private var isCoreFloat: Bool {
        var rest = Substring(text).utf8[...]
        func digits() -> Int {
            let count = rest.prefix(while: Self.isDigit).count
            rest = rest.dropFirst(count)
            return count
        }
        func take(_ characters: String) -> Bool {
            guard let first = rest.first, characters.utf8.contains(first) else { return false }
            rest = rest.dropFirst()
            return true
        }
        _ = take("-+")
        if take(".") {
            guard digits() > 0 else { return false }
        } else {
            guard digits() > 0 else { return false }
            if take(".") { _ = digits() }
        }
        if take("eE") {
            _ = take("-+")
            guard digits() > 0 else { return false }
        }
        return rest.isEmpty
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}

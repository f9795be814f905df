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

    /// A decimal integer (`12`, `-3`, `+4`), `0o17` or `0x1F`.
    public var int: Int? {
        guard style == .plain else { return nil }
        if text.hasPrefix("0x") { return Int(text.dropFirst(2), radix: 16) }
        if text.hasPrefix("0o") { return Int(text.dropFirst(2), radix: 8) }
        guard let first = text.first, first.isNumber || first == "-" || first == "+" else { return nil }
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
        let allowed = Set("0123456789.eE+-")
        guard !text.isEmpty, text.allSatisfy(allowed.contains), text.contains(where: \.isNumber) else { return nil }
        return Double(text)
    }
}

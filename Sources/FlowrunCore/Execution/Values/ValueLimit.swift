/// The 1 MiB rule (SPEC §2): a value longer than `bytes` is never cut. A
/// `foreach` over `tasks.T.stdout` reads such a stdout whole from disk; any
/// other use fails the task (or group) that refers to it, naming the value
/// and its size.
public enum ValueLimit {
    public static let bytes = 1 << 20

    /// Fails when an operand of `expression` is longer than `bytes`, e.g.
    /// `tasks.list.stdout is 1.4 MiB; values over 1 MiB can only feed a foreach`.
    public static func check(_ expression: Expression, at location: SourceLocation, in context: some ExpressionContext) throws(TemplateRenderError) {
        for operand in expression.operands {
            let size = context.byteCount(of: operand.path) ?? context.value(of: operand.path)?.text.utf8.count ?? 0
            guard size > bytes else { continue }
            throw TemplateRenderError(location: location, message: message(operand.text, size: size))
        }
    }

    /// The last `bytes` bytes of `text`, starting at a whole character: what
    /// the summary and join blocks show of a value too long to keep.
    static func tail(_ text: String, bytes: Int = bytes) -> String {
        let utf8 = text.utf8
        guard utf8.count > bytes else { return text }
        var start = utf8.index(utf8.endIndex, offsetBy: -bytes)
        while start < utf8.endIndex, utf8[start] & 0xC0 == 0x80 { start = utf8.index(after: start) }
        return String(decoding: utf8[start...], as: UTF8.self)
    }

    static func message(_ name: String, size: Int) -> String {
        "\(name) is \(mebibytes(size)); values over 1 MiB can only feed a foreach"
    }

    /// `1.4 MiB`; a size that rounds to 1.0 is given in bytes too (`1.0 MiB (1,048,577 bytes)`).
    static func mebibytes(_ size: Int) -> String {
        let tenths = (size * 10 + (1 << 19)) >> 20
        let text = "\(tenths / 10).\(tenths % 10) MiB"
        return tenths <= 10 ? "\(text) (\(size.grouped) bytes)" : text
    }
}

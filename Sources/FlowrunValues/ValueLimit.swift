package import FlowrunModel

/// The 1 MiB rule (SPEC §2): a value longer than `bytes` is never cut. A
/// `foreach` over `tasks.T.stdout` reads such a stdout whole from disk; any
/// other use fails the task (or group) that refers to it, naming the value
/// and its size.
package enum ValueLimit {
    package static let bytes = 1 << 20

    /// Fails when an operand of `expression` is longer than `bytes`, e.g.
    /// `tasks.list.stdout is 1.4 MiB; values over 1 MiB can only feed a foreach`.
    /// Only values the context knows to be longer than what it holds (a
    /// stdout past 1 MiB) are found without reading them; `measuringValues`
    /// reads every operand too (for `if:`, where no value is inserted).
    package static func check(
        _ expression: Expression, at location: SourceLocation, in context: some ExpressionContext, measuringValues: Bool = false
    ) throws(TemplateRenderError) {
        for operand in expression.operands {
            var size = context.byteCount(of: operand.path)
            if size == nil, measuringValues { size = context.value(of: operand.path)?.text.utf8.count }
            guard let size, size > bytes else { continue }
            throw TemplateRenderError(location: location, message: message(operand.text, size: size))
        }
    }

    /// Fails when the value an expression gives, to be inserted somewhere, is longer than `bytes`.
    package static func check(value: String, of expression: Expression, at location: SourceLocation) throws(TemplateRenderError) {
        let size = value.utf8.count
        guard size > bytes else { return }
        let name: String
        if case .operand(let operand) = expression { name = operand.text } else { name = "${{ \(expression) }}" }
        throw TemplateRenderError(location: location, message: message(name, size: size))
    }

    /// The last `bytes` bytes of `text`, starting at a whole character: what
    /// the summary and join blocks show of a value too long to keep.
    package static func tail(_ text: String, bytes: Int = bytes) -> String {
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
    package static func mebibytes(_ size: Int) -> String {
        let tenths = (size * 10 + (1 << 19)) >> 20
        let text = "\(tenths / 10).\(tenths % 10) MiB"
        return tenths <= 10 ? "\(text) (\(size.grouped) bytes)" : text
    }
}

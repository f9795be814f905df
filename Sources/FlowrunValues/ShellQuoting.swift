package import FlowrunModel

/// How a value is written into a `run:` script for the context it lands in,
/// so that the shell reads back exactly the value's text and runs none of it.
///
/// Quotes are closed and reopened around a single-quoted word rather than
/// escaped in place: `"src=${{ v }}"` becomes `"src="'true'""`, which the
/// shell joins into one word `src=true`. Heredoc bodies do not treat `'` as
/// a quote, so there the characters the shell acts on are escaped with `\`.
package enum ShellQuoting {
    /// Why a value cannot be written where it stands; the task fails with it.
    package struct Refusal: Error {
        package var reason: String
    }

    /// `value` written for `point`. A `literal` (a template parameter's
    /// text) that is one plain word is written bare as a word, as it reads.
    package static func text(_ value: String, at point: ShellInsertionPoint, literal: Bool = false) throws(Refusal) -> String {
        var text: String
        switch point.insertion {
        case .word, .parameterWord:
            text = literal ? word(value) : TemplateRenderer.shellWord(value)
        case .doubleQuoted:
            text = "\"" + TemplateRenderer.shellWord(value) + "\""
        case .singleQuoted:
            text = "'" + TemplateRenderer.shellWord(value) + "'"
        case .dollarSingleQuoted:
            text = "'" + TemplateRenderer.shellWord(value) + "$'"
        case .heredoc(let delimiter, let quoted, let stripsTabs):
            try checkHeredoc(value, delimiter: delimiter, stripsTabs: stripsTabs)
            text = quoted ? value : escaped(value, "\\$`")
        case .comment:
            // Only a newline ends a comment: the text of a comment runs nowhere.
            text = value.replacingAll("\n", with: " ")
        case .evaluated(let construct):
            throw Refusal(reason: "lands in \(construct), where bash evaluates text as code; pass it through env: and use the variable")
        case .unsupported(let reason):
            throw Refusal(reason: "lands in \(reason), where it cannot be quoted")
        }
        // Each enclosing backtick substitution removes one level of `\` before `\`, `` ` `` and `$`.
        for _ in 0..<point.backticks { text = escaped(text, "\\`$") }
        return text
    }

    /// `text` as one shell word, quoted only when it must be (`linux`, `'a b'`).
    package static func word(_ text: String) -> String {
        let plain = !text.isEmpty && text.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte | 0x20) || (0x30...0x39).contains(byte) || "_-./:@%+,".utf8.contains(byte)
        }
        return plain ? text : TemplateRenderer.shellWord(text)
    }

    /// A line of the value that ends the heredoc early would leave the rest
    /// of the value to run as commands; `<<-` would strip its leading tabs.
    static func checkHeredoc(_ value: String, delimiter: String, stripsTabs: Bool) throws(Refusal) {
        guard value.utf8.contains(0x0A) else { return }
        if value.contains(delimiter) {
            throw Refusal(reason: "holds '\(delimiter)', which would end its heredoc early; choose another delimiter or pass it through env:")
        }
        if stripsTabs, value.contains("\n\t") {
            throw Refusal(reason: "has lines starting with a tab, which <<- strips; use << or pass it through env:")
        }
    }

    /// `text` with a `\` before each byte in `special` (all ASCII).
    static func escaped(_ text: String, _ special: String) -> String {
        let special = Array(special.utf8)
        guard text.utf8.contains(where: special.contains) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 8)
        for byte in text.utf8 {
            if special.contains(byte) { bytes.append(0x5C) }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Where in a `run:` script a `${{ }}` value lands, as the shell will parse
/// it: this decides how the value is written so that the shell reads back
/// exactly its text and never runs it (SPEC §11).
public enum ShellInsertion: Sendable, Hashable {
    /// An unquoted word: a command's words, `case`, `[[ ]]`, `$( )`, a here-string.
    case word
    /// Inside `"…"`.
    case doubleQuoted
    /// Inside `'…'`.
    case singleQuoted
    /// Inside bash's `$'…'`.
    case dollarSingleQuoted
    /// The word of `${name:-word}` and the like, outside double quotes.
    case parameterWord
    /// A heredoc's body; `quoted` for `<<'EOF'`, whose body the shell leaves as it is.
    case heredoc(delimiter: String, quoted: Bool, stripsTabs: Bool)
    /// After `#`: the shell reads nothing but the end of the line.
    case comment
    /// A place where the shell evaluates the text itself as code (bash
    /// arithmetic): no quoting makes a value safe there. `construct` names it.
    case evaluated(construct: String)
    /// A place this scanner does not follow (nested backticks): refused.
    case unsupported(reason: String)
}

/// One `${{ }}` in a `run:` script: its context, and how many backtick
/// command substitutions enclose it (each one unescapes `\`, `` ` `` and `$` once).
public struct ShellInsertionPoint: Sendable, Hashable {
    public var insertion: ShellInsertion
    public var backticks: Int

    public init(_ insertion: ShellInsertion, backticks: Int = 0) {
        self.insertion = insertion
        self.backticks = backticks
    }
}

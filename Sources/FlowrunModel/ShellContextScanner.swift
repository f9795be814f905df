/// Reads a `run:` script as a POSIX shell (and bash) would, far enough to
/// tell the context of each `${{ }}` in it: a plain word, double or single
/// quotes, a heredoc body, a comment, `${x:-…}`, or a place where bash
/// evaluates text as arithmetic or takes it as a variable name (`declare`,
/// `read`, `printf -v`, `[[ -v ]]`, a name the script declares `-i` or
/// reads as `${!x}`), quoted or not. Where sh and bash would read the rest
/// differently (`$'…\'…'`, `<<$'EOF'`) every later value is refused: the
/// scan fails safe rather than guess. The contexts depend only on the script's
/// text, never on a value, so the loader checks them once (refusing the
/// evaluated ones) and the renderer quotes each value for its context.
///
/// It follows nesting (`$( )`, backticks, `${ }`, `$(( ))`, quotes in
/// substitutions) and heredocs (`<<`, `<<-`, quoted or not). It is not a
/// full parser: constructs it does not follow leave the context it is in.
///
/// A script is scanned once per process (`ScannedScripts`): a fan-out's
/// members render the one template, and its scan cost ~40 K instructions.
public struct ShellContextScanner {
    /// Stands for an expression in the scanned text; a script cannot hold
    /// NUL (a process cannot receive it), so it is never the script's own.
    static let marker: UInt8 = 0

    /// The context of each `.expression` segment, in order.
    public static func insertionPoints(in segments: [Template.Segment]) -> [ShellInsertionPoint] {
        var bytes: [UInt8] = []
        for segment in segments {
            switch segment {
            case .text(let text):
                // Appended whole, then any NUL of the text made a space (`map` made an array and called a closure a byte).
                let start = bytes.count
                bytes += text.utf8
                for index in start..<bytes.count where bytes[index] == marker { bytes[index] = 0x20 }
            case .expression: bytes.append(marker)
            }
        }
        if let known = ScannedScripts.shared.points(for: bytes) { return known }
        let points = scan(bytes)
        ScannedScripts.shared.keep(points, for: bytes)
        return points
    }

    private static func scan(_ bytes: [UInt8]) -> [ShellInsertionPoint] {
        // Pass one collects the names whose assigned text bash evaluates
        // (`declare -i n`, `${!x}`, a name in arithmetic), wherever in the
        // script they appear; pass two refuses values assigned to them.
        var first = ShellContextScanner(bytes: bytes)
        first.command(end: .endOfScript)
        var scanner = ShellContextScanner(bytes: bytes)
        scanner.evaluatedNames = first.evaluatedNames
        scanner.command(end: .endOfScript)
        // Whatever was left unread (a nesting past the limit) still gets a context.
        while scanner.index < scanner.bytes.count {
            if scanner.bytes[scanner.index] == marker { scanner.record(.unsupported(reason: "a script nested deeper than \(maximumDepth) levels")) }
            scanner.index += 1
        }
        return scanner.points
    }

    static let maximumDepth = 64

    enum End { case endOfScript, parenthesis, backtick, doubleBracket }

    struct Heredoc {
        var delimiter: [UInt8]
        var quoted: Bool
        var stripsTabs: Bool
    }

    var bytes: [UInt8]
    var index = 0
    var points: [ShellInsertionPoint] = []
    var backticks = 0
    var depth = 0
    var pendingHeredocs: [Heredoc] = []
    /// Names declared `-i`/`-n`/`-a`/`-A`, read with `${!NAME}`, or named in arithmetic.
    var evaluatedNames: Set<[UInt8]> = []
    /// Set once the scan cannot know how the shell reads what follows (a
    /// `$'…'` holding `\'`, which sh and bash end at different places; a
    /// delimiter it cannot read): every later value is refused.
    var lost: String?

    init(bytes: [UInt8]) { self.bytes = bytes }

    func peek(_ offset: Int = 0) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    mutating func record(_ insertion: ShellInsertion) {
        if let lost {
            points.append(ShellInsertionPoint(.unsupported(reason: lost), backticks: backticks))
            return
        }
        points.append(ShellInsertionPoint(insertion, backticks: backticks))
    }

    /// Points from `start` on become evaluated (the command or word they are in takes text as code or as a name).
    mutating func evaluate(from start: Int, construct: String) {
        guard start < points.count else { return }
        for position in start..<points.count {
            switch points[position].insertion {
            case .comment, .unsupported, .evaluated, .heredoc: continue
            default: points[position].insertion = .evaluated(construct: construct)
            }
        }
    }

    static func isBoundary(_ byte: UInt8) -> Bool {
        " \t\n;&|()<>".utf8.contains(byte)
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte | 0x20) || (0x30...0x39).contains(byte) || byte == 0x5F
    }

    /// Words after which a new command still starts.
    static let keywords: Set<[UInt8]> = Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time", "esac", "in", "for", "select"].map { Array($0.utf8) })
    /// Commands that take every argument as code or as a variable name (whose subscript is arithmetic).
    static let evaluatingCommands: [[UInt8]: String] = [
        "let": "let", "eval": "eval", "read": "read's variable names", "mapfile": "mapfile's array name",
        "readarray": "readarray's array name", "unset": "unset's variable names",
    ].reduce(into: [:]) { $0[Array($1.key.utf8)] = $1.value }
    /// Commands whose `-v` takes a variable name: `printf -v NAME`, `test -v NAME`.
    static let nameOptionCommands: Set<[UInt8]> = Set(["printf", "test", "["].map { Array($0.utf8) })
    /// Commands whose `-i` option makes assigned values arithmetic.
    static let declarations: Set<[UInt8]> = Set(["declare", "typeset", "local", "readonly", "export"].map { Array($0.utf8) })
    /// `[[ ]]` operators that evaluate both sides as arithmetic.
    static let arithmeticTests: Set<[UInt8]> = Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R"].map { Array($0.utf8) })

    /// Enters a nested construct; past the limit the rest is left unread.
    mutating func nested(_ body: (inout ShellContextScanner) -> Void) {
        guard depth < Self.maximumDepth else {
            index = bytes.count
            return
        }
        depth += 1
        body(&self)
        depth -= 1
    }

    /// Commands: the script, `$( )`, `( )`, backticks, `[[ ]]`.
    mutating func command(end: End, arrayLiteral: Bool = false) {
        var word: [UInt8] = []
        var wordIsCommand = true  // the word being read starts a command
        var atCommandStart = true
        var caseDepth = 0
        var evaluated: String?  // `let …`, `declare -i …`: the rest of the command is arithmetic
        var declaration = false
        var nestedBackticks = false
        var arithmeticTest: String?  // `[[ -eq ]]` or `[[ -v ]]`
        var typedDeclaration = false  // `declare -i|-n|-a|-A`: the names it declares are evaluated
        var commandName: [UInt8]?
        var nameOption = false  // after `printf -v`, `test -v`
        let firstPoint = points.count
        var commandFirstPoint = points.count
        var wordFirstPoint = points.count

        func finishWord() {
            defer { word = []; wordIsCommand = atCommandStart }
            guard !word.isEmpty else { return }
            if end == .doubleBracket, Self.arithmeticTests.contains(word) { arithmeticTest = word.last == UInt8(ascii: "v") || word.last == UInt8(ascii: "R") ? "[[ -v ]]" : "[[ -eq ]]" }
            if nameOption {
                nameOption = false
                evaluate(from: wordFirstPoint, construct: "a variable name (after -v)")
            }
            if let name = commandName, Self.nameOptionCommands.contains(name), word == Array("-v".utf8) { nameOption = true }
            let equals = word.firstIndex(of: UInt8(ascii: "="))
            var name = equals.map { Array(word[..<$0]) } ?? word
            if name.last == UInt8(ascii: "+") { name.removeLast() }
            let plainName = !name.isEmpty && name.allSatisfy(Self.isNameByte) && !(0x30...0x39).contains(name[0])
            if declaration, commandName != nil, word.first == UInt8(ascii: "-") || word.first == UInt8(ascii: "+") {
                if word.contains(where: { "inaA".utf8.contains($0) }) {
                    typedDeclaration = true
                    if word.contains(UInt8(ascii: "i")) { evaluated = "declare -i" } else if word.contains(UInt8(ascii: "n")) { evaluated = "declare -n" }
                }
            } else if declaration, commandName != nil {
                // The word's name part is a variable name: a value there is taken as one.
                if !plainName {
                    evaluate(from: wordFirstPoint, construct: "a variable name of \(String(decoding: commandName ?? [], as: UTF8.self))")
                } else {
                    if typedDeclaration { evaluatedNames.insert(name) }
                    if evaluated == nil, evaluatedNames.contains(name) { evaluate(from: wordFirstPoint, construct: "an assignment to \(String(decoding: name, as: UTF8.self)), which the script declares -i/-n or evaluates") }
                }
            } else if atCommandStart, equals != nil, plainName, evaluatedNames.contains(name) {
                evaluate(from: wordFirstPoint, construct: "an assignment to \(String(decoding: name, as: UTF8.self)), which the script declares -i/-n or evaluates")
            }
            guard atCommandStart else { return }
            if word == Array("case".utf8) { caseDepth += 1 }
            if word == Array("esac".utf8) { caseDepth = max(0, caseDepth - 1) }
            // An assignment before the command keeps the command to come.
            let assignment = equals.map { $0 > 0 && plainName } ?? false
            if !Self.keywords.contains(word) && !assignment {
                atCommandStart = false
                commandName = word
                if let construct = Self.evaluatingCommands[word] { evaluated = construct }
                if Self.declarations.contains(word) { declaration = true }
            }
        }
        func finishCommand() {
            if let evaluated { evaluate(from: commandFirstPoint, construct: evaluated) }
        }
        func newCommand() {
            finishCommand()
            atCommandStart = true
            wordIsCommand = true
            evaluated = nil
            declaration = false
            typedDeclaration = false
            commandName = nil
            nameOption = false
            commandFirstPoint = points.count
        }
        defer { finishCommand() }

        while let byte = peek() {
            if word.isEmpty { wordFirstPoint = points.count }
            if nestedBackticks, byte != Self.marker, !(byte == UInt8(ascii: "\\") && peek(1) == UInt8(ascii: "`")) {
                index += 1
                continue
            }
            switch byte {
            case Self.marker:
                if nestedBackticks {
                    record(.unsupported(reason: "nested backticks (use $( ) instead)"))
                } else if let evaluated {
                    record(.evaluated(construct: evaluated))
                } else if arrayLiteral {
                    record(.unsupported(reason: "an array literal"))
                } else {
                    record(.word)
                }
                word.append(byte)
                index += 1
            case UInt8(ascii: "\\"):
                if end == .backtick, peek(1) == UInt8(ascii: "`") {
                    nestedBackticks.toggle()
                    index += 2
                    continue
                }
                word.append(byte)
                index += 2
            case UInt8(ascii: "'"):
                word.append(byte)
                singleQuotes()
            case UInt8(ascii: "\""):
                word.append(byte)
                nested { $0.doubleQuotes() }
            case UInt8(ascii: "$"):
                word.append(byte)
                if peek(1) == UInt8(ascii: "'") {
                    index += 1
                    dollarSingleQuotes()
                } else {
                    dollar(quoted: false)
                }
            case UInt8(ascii: "`"):
                if end == .backtick {
                    index += 1
                    finishWord()
                    return
                }
                word.append(byte)
                index += 1
                backticks += 1
                nested { $0.command(end: .backtick) }
                backticks -= 1
            case UInt8(ascii: "#") where word.isEmpty:
                while let next = peek(), next != UInt8(ascii: "\n") {
                    if next == Self.marker { record(.comment) }
                    index += 1
                }
            case UInt8(ascii: "\n"):
                finishWord()
                index += 1
                newCommand()
                let heredocs = pendingHeredocs
                pendingHeredocs = []
                for heredoc in heredocs { heredocBody(heredoc) }
            case UInt8(ascii: ";"), UInt8(ascii: "&"), UInt8(ascii: "|"):
                finishWord()
                index += 1
                newCommand()
            case UInt8(ascii: "("):
                let compound = word.last == UInt8(ascii: "=")  // `a=(…)`, `declare -A a=(…)`: an array literal
                finishWord()
                if compound {
                    index += 1
                    nested { $0.command(end: .parenthesis, arrayLiteral: true) }
                    continue
                }
                if atCommandStart, peek(1) == UInt8(ascii: "(") {
                    index += 2
                    nested { $0.arithmetic(construct: "(( ))", open: UInt8(ascii: "("), close: UInt8(ascii: ")"), depth: 2) }
                } else if caseDepth > 0 && atCommandStart {
                    index += 1  // `(pattern)` in a case
                } else {
                    index += 1
                    nested { $0.command(end: .parenthesis) }
                }
                newCommand()
            case UInt8(ascii: ")"):
                finishWord()
                index += 1
                if end == .parenthesis, caseDepth == 0 { return }
                newCommand()  // a case pattern's end
            case UInt8(ascii: "<"):
                finishWord()
                if peek(1) == UInt8(ascii: "<"), peek(2) != UInt8(ascii: "<") {
                    index += 2
                    heredocOperator()
                } else {
                    while peek() == UInt8(ascii: "<") { index += 1 }
                }
            case UInt8(ascii: "[") where arrayLiteral && word.isEmpty:
                index += 1
                nested { $0.arithmetic(construct: "an array literal's subscript", open: UInt8(ascii: "["), close: UInt8(ascii: "]"), depth: 1) }
                word.append(byte)
            case UInt8(ascii: "["):
                if word.isEmpty, atCommandStart, end != .doubleBracket, peek(1) == UInt8(ascii: "["), peek(2).map(Self.isBoundary) ?? true {
                    index += 2
                    nested { $0.command(end: .doubleBracket) }
                    atCommandStart = false
                } else if !word.isEmpty, wordIsCommand, word.allSatisfy(Self.isNameByte), !(0x30...0x39).contains(word[0]) {
                    index += 1
                    nested { $0.arithmetic(construct: "an array subscript", open: UInt8(ascii: "["), close: UInt8(ascii: "]"), depth: 1) }
                    word.append(byte)
                } else {
                    word.append(byte)
                    index += 1
                }
            case UInt8(ascii: "]") where end == .doubleBracket && word.isEmpty && peek(1) == UInt8(ascii: "]") && (peek(2).map(Self.isBoundary) ?? true):
                index += 2
                // Quoted or not, both sides of an arithmetic test (and `-v`'s name) are evaluated.
                if let arithmeticTest { evaluate(from: firstPoint, construct: arithmeticTest) }
                return
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: ">"):
                finishWord()
                index += 1
            default:
                word.append(byte)
                index += 1
            }
        }
        finishWord()  // the script's last word
    }

    /// At `$` (not `$'`): `$(( ))`, `$( )`, `${ }`, `$[ ]`, or a plain `$`.
    mutating func dollar(quoted: Bool) {
        switch peek(1) {
        case UInt8(ascii: "("):
            if peek(2) == UInt8(ascii: "(") {
                index += 3
                nested { $0.arithmetic(construct: "$(( ))", open: UInt8(ascii: "("), close: UInt8(ascii: ")"), depth: 2) }
            } else {
                index += 2
                nested { $0.command(end: .parenthesis) }
            }
        case UInt8(ascii: "{"):
            index += 2
            nested { $0.parameter(quoted: quoted) }
        case UInt8(ascii: "["):
            index += 2
            nested { $0.arithmetic(construct: "$[ ]", open: UInt8(ascii: "["), close: UInt8(ascii: "]"), depth: 1) }
        default:
            index += 1
        }
    }

    mutating func singleQuotes() {
        index += 1
        while let byte = peek() {
            index += 1
            if byte == UInt8(ascii: "'") { return }
            if byte == Self.marker { record(.singleQuoted) }
        }
    }

    mutating func dollarSingleQuotes() {
        index += 1
        while let byte = peek() {
            index += 1
            if byte == UInt8(ascii: "'") { return }
            if byte == UInt8(ascii: "\\") {
                // sh has no `$'…'`: to it `\'` ends a single-quoted string, so from here on the two shells read the script differently.
                if peek() == UInt8(ascii: "'") { lost = "a script after a $'…' holding \\' (sh and bash end that quote at different places)" }
                index += 1
            }
            if byte == Self.marker { record(.dollarSingleQuoted) }
        }
    }

    mutating func doubleQuotes() {
        index += 1
        while let byte = peek() {
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 2
            case Self.marker:
                record(.doubleQuoted)
                index += 1
            case UInt8(ascii: "$"):
                dollar(quoted: true)
            case UInt8(ascii: "`"):
                index += 1
                backticks += 1
                nested { $0.command(end: .backtick) }
                backticks -= 1
            default:
                index += 1
            }
        }
    }

    /// Inside `$(( ))`, `(( ))`, `$[ ]` or a subscript, up to its close.
    mutating func arithmetic(construct: String, open: UInt8, close: UInt8, depth start: Int) {
        var depth = start
        while let byte = peek() {
            if byte == Self.marker {
                record(.evaluated(construct: construct))
                index += 1
            } else if byte == open {
                depth += 1
                index += 1
            } else if byte == close {
                depth -= 1
                index += 1
                if depth == 0 { return }
            } else if byte == UInt8(ascii: "$") {
                dollar(quoted: true)
            } else if Self.isNameByte(byte), !(0x30...0x39).contains(byte) {
                // A variable named here has its text evaluated too: `x=…; $(( x ))`.
                let start = index
                while let next = peek(), Self.isNameByte(next) { index += 1 }
                evaluatedNames.insert(Array(bytes[start..<index]))
            } else {
                index += 1
            }
        }
    }

    /// After `${`: the name, then a word (`:-word`), an offset (arithmetic) or the end.
    mutating func parameter(quoted: Bool) {
        if peek() == UInt8(ascii: "!") {
            // `${!x}`: x's text is taken as a name, whose subscript is arithmetic.
            index += 1
            let start = index
            while let byte = peek(), Self.isNameByte(byte) { index += 1 }
            evaluatedNames.insert(Array(bytes[start..<index]))
            index = start
        } else if peek() == UInt8(ascii: "#") {
            index += 1
        }
        if let byte = peek(), !Self.isNameByte(byte), byte != UInt8(ascii: "}"), byte != Self.marker { index += 1 }  // $@, $*, $?, …
        while let byte = peek(), Self.isNameByte(byte) { index += 1 }
        if peek() == UInt8(ascii: "[") {
            index += 1
            nested { $0.arithmetic(construct: "an array subscript", open: UInt8(ascii: "["), close: UInt8(ascii: "]"), depth: 1) }
        }
        if peek() == UInt8(ascii: ":"), let next = peek(1), !"-=?+".utf8.contains(next) {
            index += 1
            nested { $0.arithmetic(construct: "${name:offset}", open: UInt8(ascii: "{"), close: UInt8(ascii: "}"), depth: 1) }
            return
        }
        while let byte = peek() {
            switch byte {
            case UInt8(ascii: "}"):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 2
            case Self.marker:
                // Inside "…" or a heredoc bash still pairs `'` in the word, yet keeps it: no quoting reads back exactly.
                record(quoted ? .unsupported(reason: "${name:-…} inside double quotes or a heredoc (write it unquoted)") : .parameterWord)
                index += 1
            case UInt8(ascii: "'") where !quoted:
                singleQuotes()
            case UInt8(ascii: "\""):
                nested { $0.doubleQuotes() }
            case UInt8(ascii: "$"):
                dollar(quoted: quoted)
            case UInt8(ascii: "`"):
                index += 1
                backticks += 1
                nested { $0.command(end: .backtick) }
                backticks -= 1
            default:
                index += 1
            }
        }
    }

    /// After `<<`: `-`, then the delimiter word; quoting any of it makes the body literal.
    mutating func heredocOperator() {
        var heredoc = Heredoc(delimiter: [], quoted: false, stripsTabs: false)
        if peek() == UInt8(ascii: "-") {
            heredoc.stripsTabs = true
            index += 1
        }
        while let byte = peek(), byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { index += 1 }
        while let byte = peek(), !Self.isBoundary(byte) {
            index += 1
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                heredoc.quoted = true
                while let inner = peek(), inner != byte {
                    heredoc.delimiter.append(inner)
                    index += 1
                }
                index += 1
            case UInt8(ascii: "\\"):
                heredoc.quoted = true
                if let next = peek() {
                    heredoc.delimiter.append(next)
                    index += 1
                }
            case Self.marker:
                record(.unsupported(reason: "a heredoc's delimiter"))
                heredoc.delimiter.append(byte)
            case UInt8(ascii: "$"), UInt8(ascii: "`"):
                // `<<$'EOF'` is EOF to bash and $EOF to sh: where the body ends is not known.
                lost = "a script after a heredoc whose delimiter holds $ or a backtick (write <<'EOF')"
                heredoc.delimiter.append(byte)
            default:
                heredoc.delimiter.append(byte)
            }
        }
        if !heredoc.delimiter.isEmpty { pendingHeredocs.append(heredoc) }
    }

    /// A heredoc's lines up to and with its delimiter line.
    mutating func heredocBody(_ heredoc: Heredoc) {
        let insertion = ShellInsertion.heredoc(delimiter: String(decoding: heredoc.delimiter, as: UTF8.self), quoted: heredoc.quoted, stripsTabs: heredoc.stripsTabs)
        while index < bytes.count {
            var lineStart = index
            if heredoc.stripsTabs { while lineStart < bytes.count, bytes[lineStart] == UInt8(ascii: "\t") { lineStart += 1 } }
            let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            if bytes[lineStart..<lineEnd].elementsEqual(heredoc.delimiter) {
                index = min(lineEnd + 1, bytes.count)
                return
            }
            while let byte = peek() {
                if byte == UInt8(ascii: "\n") {
                    index += 1
                    break
                }
                if byte == Self.marker {
                    record(insertion)
                    index += 1
                } else if heredoc.quoted {
                    index += 1
                } else if byte == UInt8(ascii: "\\") {
                    index += 2
                } else if byte == UInt8(ascii: "$") {
                    dollar(quoted: true)
                } else if byte == UInt8(ascii: "`") {
                    index += 1
                    backticks += 1
                    nested { $0.command(end: .backtick) }
                    backticks -= 1
                } else {
                    index += 1
                }
            }
        }
    }
}

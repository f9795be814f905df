#if canImport(Glibc)
import Glibc
#endif

/// The command lines flowrun is started with most (`--version`, `validate
/// FILE…`, `list [FILE]`, `[run] [FILE] [TARGET…] [common options]`), read
/// without argument-parser: its `parseAsRoot` reflects over every
/// subcommand's properties (Mirror, type lookups by mangled name) before it
/// reads a word — a third of `--version`'s time (docs/BENCHMARKS.md).
///
/// It reads only what it is sure of, and declines anything else (help, an
/// option it does not know, `--opt=value`, a value that starts with `-`, a
/// flag given twice, a value argument-parser would refuse): argument-parser
/// then parses the whole line as before, and prints help, completions,
/// usage errors and the man page. What it reads runs the same code the
/// parsed command's `run()` calls, with the same values.
enum FastCommandLine {
    /// The command to run, or nil for argument-parser. `arguments` without
    /// the program's name and without a run's `--` and what follows.
    static func command(_ arguments: ArraySlice<String>) -> (() throws -> Void)? {
        guard let first = arguments.first else { return run(arguments) }
        switch first {
        case "--version":
            guard arguments.count == 1 else { return nil }
            return { Terminal.standardOutput.write(BuildInfo.versionText + "\n") }
        case "validate": return validate(arguments.dropFirst())
        case "list": return list(arguments.dropFirst())
        case "run": return run(arguments.dropFirst())
        default:
            // Another subcommand (`watch` reads `--` as a run does, so it is not
            // among `otherCommands`), or `help`: argument-parser's.
            if PassedArguments.otherCommands.contains(first) || first == "watch" || first == "help" { return nil }
            return run(arguments)
        }
    }

    /// `validate [-q|--quiet] [FILE…]`
    private static func validate(_ words: ArraySlice<String>) -> (() throws -> Void)? {
        var files: [String] = []
        var quiet = false
        for word in words {
            if word == "-q" || word == "--quiet" {
                if quiet { return nil }
                quiet = true
            } else if isValue(word) {
                files.append(word)
            } else {
                return nil
            }
        }
        return { try ValidateCommand.check(files, quiet: quiet) }
    }

    /// `list [FILE] [--output text|json]`
    private static func list(_ words: ArraySlice<String>) -> (() throws -> Void)? {
        var file: String?
        var output: ListCommand.Output?
        var rest = words
        while let word = rest.popFirst() {
            if word == "--output" {
                guard output == nil, let value = rest.popFirst(), let mode = ListCommand.Output(rawValue: value) else { return nil }
                output = mode
            } else if isValue(word), file == nil {
                file = word
            } else {
                return nil
            }
        }
        return { [file] in try ListCommand.list(file, output: output ?? .text) }
    }

    /// `[FILE] [TARGET…]` with run's options, each in its `--name value` form.
    private static func run(_ words: ArraySlice<String>) -> (() throws -> Void)? {
        var positional: [String] = []
        var only: [String] = []
        var dryRun = false
        var settings = RunChoices()
        var seen: [String] = []
        var rest = words
        while let word = rest.popFirst() {
            guard word.hasPrefix("-") else {
                guard isValue(word) else { return nil }
                positional.append(word)
                continue
            }
            // Once each (argument-parser's rules for a repeated flag or option are its own).
            let repeatable = word == "--var" || word == "--only"
            guard repeatable || !seen.contains(word) else { return nil }
            seen.append(word)
            switch word {
            case "--dry-run": dryRun = true
            case "--fail-fast": settings.failFast = true
            case "--parallel": settings.parallel = true
            case "--stream": settings.stream = true
            case "--force": settings.force = true
            case "--yes": settings.yes = true
            default:
                guard let value = rest.popFirst(), isValue(value) else { return nil }
                switch word {
                case "--var": settings.variables.append(value)
                case "--only": only.append(value)
                case "--log-dir": settings.logDir = value
                case "--output":
                    guard let mode = RunCommand.OutputMode(rawValue: value) else { return nil }
                    settings.output = mode
                case "--keep":
                    guard let keep = decimal(value) else { return nil }
                    settings.keep = keep
                case "--max-parallel":
                    guard let count = decimal(value) else { return nil }
                    settings.maxParallel = count
                default: return nil
                }
            }
        }
        // A value argument-parser would refuse: its usage error, from it.
        guard settings.problem == nil else { return nil }
        return { [positional, only, settings] in try RunCommand.run(arguments: positional, dryRun: dryRun, only: only, settings: settings) }
    }

    /// `FLOWRUN_PARSER=argument-parser`: every command line through
    /// argument-parser (how the tests compare the two readings).
    static var isTurnedOff: Bool {
        getenv("FLOWRUN_PARSER").map { String(cString: $0) == "argument-parser" } ?? false
    }

    /// A word argument-parser reads as a value: not empty, no leading `-`.
    private static func isValue(_ word: String) -> Bool {
        !word.isEmpty && !word.hasPrefix("-")
    }

    /// Plain decimal digits only (`Int("+5")` takes a sign argument-parser's reading may not).
    private static func decimal(_ word: String) -> Int? {
        guard word.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(word)
    }
}

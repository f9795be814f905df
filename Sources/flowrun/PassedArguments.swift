import ArgumentParser

/// `flowrun FILE test -- -run TestX` (SPEC §15): the words after the first
/// `--` of a run are not flowrun's but the named targets' (`${{ args }}`);
/// they are cut off before the command line is parsed, so that `-run` is
/// not read as an option nor `TestX` as a target. Other commands keep `--`
/// as the usual end of options.
enum PassedArguments {
    /// The command line without `--` and what follows, and the words after
    /// it (nil: no `--`).
    static let split: (arguments: [String], passed: [String]?) = split(CommandLine.arguments)

    /// The subcommands but `run`, spelt out: reading them from
    /// `Flowrun.configuration` reflects over every command (a third of
    /// `--version`'s time). `CommandLineTests` checks the two agree.
    /// (An array: a `Set<String>`'s metadata is built at run time, a tenth of `--version`.)
    static let otherCommands = ["validate", "graph", "list", "export", "runs", "show", "logs", "resume"]

    static func split(_ arguments: [String]) -> (arguments: [String], passed: [String]?) {
        if arguments.count > 1, otherCommands.contains(arguments[1]) { return (arguments, nil) }
        // The shell's completion calls (`---completion run -- WORDS…`) use `--` for the words typed so far.
        if arguments.dropFirst().first?.hasPrefix("---completion") == true { return (arguments, nil) }
        guard let dashes = arguments.dropFirst().firstIndex(of: "--") else { return (arguments, nil) }
        return (Array(arguments[..<dashes]), Array(arguments[(dashes + 1)...]))
    }
}

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

    static func split(_ arguments: [String]) -> (arguments: [String], passed: [String]?) {
        let others = Set(Flowrun.configuration.subcommands.map { $0._commandName }).subtracting([RunCommand._commandName])
        if arguments.count > 1, others.contains(arguments[1]) { return (arguments, nil) }
        // The shell's completion calls (`---completion run -- WORDS…`) use `--` for the words typed so far.
        if arguments.dropFirst().first?.hasPrefix("---completion") == true { return (arguments, nil) }
        guard let dashes = arguments.dropFirst().firstIndex(of: "--") else { return (arguments, nil) }
        return (Array(arguments[..<dashes]), Array(arguments[(dashes + 1)...]))
    }
}

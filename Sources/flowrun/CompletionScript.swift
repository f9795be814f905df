import ArgumentParser

/// `flowrun --generate-completion-script [bash|zsh|fish]`: argument-parser's
/// script, with one addition for bash.
///
/// argument-parser's scripts do not know a default subcommand: they complete
/// `flowrun run FILE --only <TAB>` but treat the FILE of `flowrun FILE --only
/// <TAB>` as an unknown subcommand and offer nothing. flowrun's commonest
/// command line is the second, so the bash script's fallback (a first word
/// that is not a subcommand) also completes as `run`: workflow files, run's
/// options and task names. zsh and fish get argument-parser's script as it is
/// (task names after `flowrun run FILE --only`).
enum CompletionScript {
    /// The script when `arguments` ask for one (the option first, as
    /// argument-parser parses it), else nil.
    static func requested(by arguments: [String]) -> String? {
        let option = "--generate-completion-script"
        guard arguments.count >= 2, arguments[1] == option || arguments[1].hasPrefix(option + "=") else { return nil }
        let name = arguments[1].hasPrefix(option + "=") ? String(arguments[1].dropFirst(option.count + 1))
            : (arguments.count > 2 ? arguments[2] : "")
        guard let shell = name.isEmpty ? CompletionShell.autodetected() : CompletionShell(rawValue: name) else { return nil }
        return script(for: shell)
    }

    static func script(for shell: CompletionShell) -> String {
        let generated = Flowrun.completionScript(for: shell)
        guard shell == .bash else { return generated }
        return completingTheDefaultSubcommand(generated)
    }

    /// The line the bash fallback starts with in argument-parser 1.8.2, and
    /// what it becomes. If a newer argument-parser words it differently,
    /// `CompletionTests` fails rather than this patch silently doing nothing.
    static let bashFallback = """
            *)
                # Offer subcommand completions
        """
    static let bashFallbackCompletingRun = """
            *)
                # flowrun's default subcommand is run: `flowrun FILE --only <TAB>`
                # completes as `flowrun run FILE --only <TAB>` would.
                unparsed_words=("${subcommand}" "${unparsed_words[@]}")
                _flowrun_run
                # Subcommands only in the first word.
                [[ "${COMP_CWORD}" -gt 1 ]] && return
                # Offer subcommand completions
        """

    static func completingTheDefaultSubcommand(_ script: String) -> String {
        guard let range = script.firstRange(of: bashFallback) else { return script }
        var patched = script
        patched.replaceSubrange(range, with: bashFallbackCompletingRun)
        return patched
    }
}

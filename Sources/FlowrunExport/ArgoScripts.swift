import FlowrunModel

/// The shell and awk text the exported pods run: a wrapper that gives a task
/// the environment flowrun gives it, the join check, and the fan-out item
/// list. POSIX sh and busybox awk, so the default `alpine:3` image is enough.
enum ArgoScripts {
    /// Where the wrapper keeps `$FLOWRUN_OUTPUT`, one file per output key, and the stash.
    static let directory = "/tmp/flowrun"

    /// `text` as one single-quoted shell word (static text only: values never
    /// reach the script text, they arrive as environment variables).
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingAll("'", with: "'\\''") + "'"
    }

    /// A shell word joining literal text and environment variables.
    static func shellWord(_ parts: [ShellPart]) -> String {
        if parts.isEmpty { return "''" }
        return parts.map { part in
            switch part {
            case .literal(let text): return shellQuoted(text)
            case .variable(let name): return "\"$\(name)\""
            }
        }.joined()
    }

    enum ShellPart: Equatable {
        case literal(String)
        case variable(String)
    }

    /// What the wrapper of one `run:` task needs to know.
    struct Wrapper {
        /// The workflow's `shell:` words (`bash -eu`: the program, then its arguments).
        var shell: [String]
        var script: String
        /// A task's own interpreter: `shell:` words, or the script's `#!` line.
        var launch: ScriptLaunch = .shellCommand
        /// Variables holding an Argo phase, mapped to flowrun's status words first.
        var phaseVariables: [String] = []
        /// `env:` of the workflow, then of the task; later entries win.
        var environment: [(name: String, word: [ShellPart])] = []
        var cwd: [ShellPart]?
        var retries: Bool = false
        /// Write the member's `groups.G.results` entry.
        var writesResult = false
        /// Stash fields published for `finally` (`status`, `exit-code`, `stdout`).
        var publishesStash = false
        /// Some output key is read: split `$FLOWRUN_OUTPUT` into one file per key.
        var readsOutputs = false
    }

    static func wrapper(_ wrapper: Wrapper) -> String {
        var lines = [
            "# flowrun task wrapper (docs/CLUSTER.md): $FLOWRUN_OUTPUT, outputs, progress.",
            "flowrun_dir=\(directory)",
            "mkdir -p \"$flowrun_dir/outputs\" && : > \"$flowrun_dir/output\" || exit 1",
        ]
        if !wrapper.phaseVariables.isEmpty {
            lines.append("flowrun_status() { case \"$1\" in Succeeded) echo succeeded ;; Skipped|Omitted) echo skipped ;; Failed|Error) echo failed ;; *) printf '%s\\n' \"$1\" ;; esac; }")
            for variable in wrapper.phaseVariables {
                lines.append("\(variable)=$(flowrun_status \"$\(variable)\")")
            }
        }
        for entry in wrapper.environment {
            lines.append("\(entry.name)=\(shellWord(entry.word)); export \(entry.name)")
        }
        lines.append("FLOWRUN_OUTPUT=$flowrun_dir/output; export FLOWRUN_OUTPUT")
        lines.append(wrapper.retries
            ? "FLOWRUN_ATTEMPT=$(( ${FLOWRUN_RETRIES:-0} + 1 )); export FLOWRUN_ATTEMPT"
            : "FLOWRUN_ATTEMPT=1; export FLOWRUN_ATTEMPT")
        if let cwd = wrapper.cwd {
            lines.append("cd -- \(shellWord(cwd)) || exit 1")
        }
        let delimiter = heredocDelimiter(for: wrapper.script)
        lines.append("cat > \"$flowrun_dir/script\" <<'\(delimiter)'")
        lines.append(wrapper.script.hasSuffix("\n") ? String(wrapper.script.dropLast()) : wrapper.script)
        lines.append(delimiter)
        let program: String
        switch wrapper.launch {
        case .shellCommand: program = wrapper.shell.map(shellQuoted).joined(separator: " ") + " \"$flowrun_dir/script\""
        case .interpreter(let words): program = words.map(shellQuoted).joined(separator: " ") + " \"$flowrun_dir/script\""
        case .shebang: program = "chmod 700 \"$flowrun_dir/script\" && \"$flowrun_dir/script\""
        }
        lines.append("{ \(program) < /dev/null; echo \"$?\" > \"$flowrun_dir/exit\"; } | awk \(shellQuoted(progressFilter))")
        lines.append("flowrun_exit=$(cat \"$flowrun_dir/exit\")")
        if wrapper.readsOutputs || wrapper.writesResult || wrapper.publishesStash {
            lines.append("FLOWRUN_EXIT=$flowrun_exit; export FLOWRUN_EXIT")
            let parser = jsonFunctions + "\n" + outputParser
            lines.append("awk -v dir=\"$flowrun_dir\" -v result=\(wrapper.writesResult ? 1 : 0) -v stash=\(wrapper.publishesStash ? 1 : 0) \(shellQuoted(parser)) \"$flowrun_dir/output\"")
        }
        lines.append("exit \"$flowrun_exit\"")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A heredoc delimiter no line of `script` equals.
    static func heredocDelimiter(for script: String) -> String {
        let lines = Set(script.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        var delimiter = "FLOWRUN_SCRIPT"
        var counter = 1
        while lines.contains(delimiter) {
            counter += 1
            delimiter = "FLOWRUN_SCRIPT_\(counter)"
        }
        return delimiter
    }

    /// `::progress::N` lines go to Argo's progress file (`N/100`), not stdout;
    /// every other line is passed on and kept for the stash.
    static let progressFilter = """
        BEGIN { progress = ENVIRON["ARGO_PROGRESS_FILE"]; keep = "\(directory)/stdout"; printf "" > keep }
        /^::progress::([0-9]|[1-9][0-9]|100)$/ { if (progress != "") { printf "%s/100\\n", substr($0, 13) > progress; close(progress) } next }
        { print; fflush(); print > keep }
        """

    /// JSON string escaping in awk, shared by the output parser and the item list.
    static let jsonFunctions = """
        function json(s,   out, i, c) {
            out = ""
            for (i = 1; i <= length(s); i++) {
                c = substr(s, i, 1)
                if (c == "\\\\") out = out "\\\\\\\\"
                else if (c == "\\"") out = out "\\\\\\""
                else if (c == "\\n") out = out "\\\\n"
                else if (c == "\\r") out = out "\\\\r"
                else if (c == "\\t") out = out "\\\\t"
                else if (c in ctrl) out = out sprintf("\\\\u%04x", ctrl[c])
                else out = out c
            }
            return "\\"" out "\\""
        }
        function initjson(   i) { for (i = 1; i < 32; i++) ctrl[sprintf("%c", i)] = i }
        """

    /// Reads `$FLOWRUN_OUTPUT` by flowrun's rules (`key=value`, `key<<DELIM`
    /// … `DELIM`, the first of `=` and `<<` decides, a later write replaces,
    /// an unterminated heredoc sets nothing) into one file per key, and
    /// writes the stash files Argo's output parameters read.
    static let outputParser = """
        function valid(k) { return k ~ /^[A-Za-z_][A-Za-z0-9_-]*$/ }
        function set(k, v) { if (!(k in value)) order[++count] = k; value[k] = v }
        BEGIN { if (result) initjson(); inside = 0 }
        inside {
            line = $0; sub(/\\r$/, "", line)
            if (line == delim) { set(key, body); inside = 0; next }
            body = started ? body "\\n" $0 : $0; started = 1; next
        }
        /^[ \\t\\r]*$/ { next }
        {
            eq = index($0, "="); hd = index($0, "<<")
            if (hd > 0 && (eq == 0 || hd < eq)) {
                key = substr($0, 1, hd - 1); delim = substr($0, hd + 2); sub(/\\r$/, "", delim)
                if (valid(key) && delim != "") { inside = 1; body = ""; started = 0 }
                next
            }
            if (eq > 0) { key = substr($0, 1, eq - 1); if (valid(key)) set(key, substr($0, eq + 1)) }
        }
        END {
            for (i = 1; i <= count; i++) { f = dir "/outputs/" order[i]; printf "%s", value[order[i]] > f; close(f) }
            code = ENVIRON["FLOWRUN_EXIT"]; status = code == "0" ? "succeeded" : "failed"
            if (stash) {
                printf "%s", status > (dir "/status"); printf "%s", code > (dir "/exit-code")
            }
            if (result) {
                out = ""; n = 0; f = dir "/stdout"
                while ((getline line < f) > 0) { out = n++ ? out "\\n" line : line }
                outputs = ""
                for (i = 1; i <= count; i++) outputs = outputs (i > 1 ? "," : "") json(order[i]) ":" json(value[order[i]])
                printf "{\\"name\\":%s,\\"item\\":%s,\\"status\\":%s,\\"stdout\\":%s,\\"outputs\\":{%s}}", json(ENVIRON["FLOWRUN_TASK"]), json(ENVIRON["FLOWRUN_ITEM"]), json(status), json(out), outputs > (dir "/result.json")
            }
        }
        """

    /// Prints a fan-out's items as Argo's `withParam` list of
    /// `{"index", "item"}` objects: a JSON array's elements (strings kept as
    /// written, anything else as its text), else one item per non-empty line.
    /// Each field the template reads (`FLOWRUN_ITEM_FIELDS`, one dotted path
    /// a line: `outputs.num`) is a key of its own, as text ("" when missing):
    /// Argo reads only an item's top-level keys.
    static let itemList = jsonFunctions + "\n" + itemFieldFunctions + "\n" + """
        BEGIN {
            nfields = split(ENVIRON["FLOWRUN_ITEM_FIELDS"], fieldlist, "\\n")
            initjson(); s = ENVIRON["FLOWRUN_ITEMS"]; t = s; sub(/^[ \\t\\r\\n]+/, "", t); sub(/[ \\t\\r\\n]+$/, "", t)
            n = 0; out = ""
            if (substr(t, 1, 1) == "[" && substr(t, length(t), 1) == "]" && parse(substr(t, 2, length(t) - 2))) {
                print "[" out "]"; exit 0
            }
            n = 0; out = ""; count = split(s, lines, "\\n")
            for (i = 1; i <= count; i++) { line = lines[i]; sub(/\\r$/, "", line); if (line ~ /[^ \\t]/) add(json(line), line) }
            print "[" out "]"
        }
        function add(item, raw) { out = out (n ? "," : "") "{\\"index\\":\\"" n "\\",\\"item\\":" item fields(raw) "}"; n++ }
        function parse(body,   i, c, start, depth, instr, esc) {
            i = 1
            while (1) {
                while (substr(body, i, 1) ~ /[ \\t\\r\\n]/) i++
                if (i > length(body)) return n > 0 || body !~ /[^ \\t\\r\\n]/
                c = substr(body, i, 1); start = i
                if (c == "\\"") {
                    i++; esc = 0
                    while (i <= length(body)) { c = substr(body, i, 1); if (esc) esc = 0; else if (c == "\\\\") esc = 1; else if (c == "\\"") break; i++ }
                    if (i > length(body)) return 0
                    add(substr(body, start, i - start + 1), substr(body, start, i - start + 1)); i++
                } else if (c == "[" || c == "{") {
                    depth = 0; instr = 0; esc = 0
                    for (; i <= length(body); i++) {
                        c = substr(body, i, 1)
                        if (instr) { if (esc) esc = 0; else if (c == "\\\\") esc = 1; else if (c == "\\"") instr = 0; continue }
                        if (c == "\\"") instr = 1; else if (c == "[" || c == "{") depth++; else if (c == "]" || c == "}") { depth--; if (depth == 0) break }
                    }
                    if (i > length(body)) return 0
                    add(json(substr(body, start, i - start + 1)), substr(body, start, i - start + 1)); i++
                } else {
                    while (i <= length(body) && substr(body, i, 1) !~ /[ \\t\\r\\n,]/) i++
                    add(json(substr(body, start, i - start)), substr(body, start, i - start))
                }
                while (substr(body, i, 1) ~ /[ \\t\\r\\n]/) i++
                if (i > length(body)) return 1
                if (substr(body, i, 1) != ",") return 0
                i++
            }
        }
        """

    /// awk: the fields an item list adds to each item (`fields`), read from
    /// an element's JSON text by key, level after level (`getkey`).
    static let itemFieldFunctions = #"""
        function fields(raw,   k, j, np, parts, cur, v, result) {
            result = ""
            for (k = 1; k <= nfields; k++) {
                cur = raw; np = split(fieldlist[k], parts, ".")
                for (j = 1; j <= np && cur != ""; j++) cur = substr(cur, 1, 1) == "{" ? getkey(cur, parts[j]) : ""
                if (cur == "" || cur == "null") v = "\"\""; else if (substr(cur, 1, 1) == "\"") v = cur; else v = json(cur)
                result = result "," json(fieldlist[k]) ":" v
            }
            return result
        }
        function getkey(obj, key,   i, n, ks, k, vs) {
            n = length(obj); i = 2
            while (i <= n) {
                while (substr(obj, i, 1) ~ /[ \t\r\n,]/) i++
                if (substr(obj, i, 1) != "\"") return ""
                ks = i; i = strend(obj, i); k = substr(obj, ks + 1, i - ks - 2)
                while (substr(obj, i, 1) ~ /[ \t\r\n:]/) i++
                vs = i; i = valend(obj, i)
                if (k == key) return substr(obj, vs, i - vs)
            }
            return ""
        }
        function strend(s, i,   c, esc) {
            i++; esc = 0
            while (i <= length(s)) { c = substr(s, i, 1); if (esc) esc = 0; else if (c == "\\") esc = 1; else if (c == "\"") return i + 1; i++ }
            return i
        }
        function valend(s, i,   c, depth, instr, esc) {
            c = substr(s, i, 1)
            if (c == "\"") return strend(s, i)
            if (c == "{" || c == "[") {
                depth = 0; instr = 0; esc = 0
                for (; i <= length(s); i++) {
                    c = substr(s, i, 1)
                    if (instr) { if (esc) esc = 0; else if (c == "\\") esc = 1; else if (c == "\"") instr = 0; continue }
                    if (c == "\"") instr = 1; else if (c == "[" || c == "{") depth++; else if (c == "]" || c == "}") { depth--; if (depth == 0) return i + 1 }
                }
                return i
            }
            while (i <= length(s) && substr(s, i, 1) !~ /[ \t\r\n,}\]]/) i++
            return i
        }
        """#
}

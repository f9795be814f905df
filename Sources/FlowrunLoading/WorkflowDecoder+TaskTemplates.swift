import FlowrunYAML
import FlowrunModel

/// `templates:` and their calls (`uses:` + `with:`).
///
/// A call is expanded while the file is read: the template's keys, the
/// call's keys over them (`env` merged by variable), decoded as one task
/// with `params.NAME` standing for the call's values. In keys that take
/// expressions (`run`, `env`, `cwd`, `http`, `if`, `name`) a parameter is a
/// value (in `run:` one shell word, like any `${{ }}` value); in every other
/// key its text replaces `${{ params.NAME }}` before the key is read, so
/// `needs`, `timeout`, `retries`, `description` and the like can use them.
extension WorkflowDecoder {
    /// At most this much text (bytes) is made by filling in calls: four times
    /// the largest file, so a big template called many times cannot exhaust memory.
    static let maxExpandedBytes = 64 * 1024 * 1024

    /// Keys that read `${{ }}` as expressions; parameters in other keys are replaced as text.
    static let expressionTaskKeys: Set<String> = ["run", "env", "cwd", "http", "if", "name"]

    /// The keys that make a task a call: `uses` (the template) and/or `with`.
    static func templateCallKeys(_ node: YAMLNode) -> (uses: YAMLNode.Pair?, with: YAMLNode.Pair?)? {
        guard let pairs = node.mapping else { return nil }
        var uses: YAMLNode.Pair?
        var with: YAMLNode.Pair?
        for pair in pairs {
            switch pair.key.scalar?.text {
            case "uses": uses = pair
            case "with": with = pair
            default: break
            }
        }
        return uses == nil && with == nil ? nil : (uses, with)
    }

    // MARK: - Declarations

    mutating func templates(_ node: YAMLNode) -> [String: TaskTemplate] {
        var templates: [String: TaskTemplate] = [:]
        for entry in named(node, what: "templates") {
            guard let pairs = mapping(entry.value, what: "template '\(entry.key.value)'") else { continue }
            var template = TaskTemplate(name: entry.key.value, location: entry.key.location, parameters: [], body: [])
            for pair in pairs {
                switch pair.key.scalar?.text {
                case "params": template.parameters = parameters(pair.value, template: entry.key.value)
                case "uses", "with":
                    error("template '\(entry.key.value)' cannot use another template: templates do not nest (give it parameters instead)", at: pair.key)
                default: template.body.append(pair)
                }
            }
            for parameter in template.parameters {
                if let node = parameter.defaultValue { template.defaults[parameter.name] = value(of: node) }
            }
            templates[template.name] = template
        }
        // Each template checked once on its own, with its defaults (a required
        // parameter stands for nothing); its calls do not repeat these problems.
        for name in templates.keys.sorted() {
            guard let template = templates[name] else { continue }
            var values: [String: TemplateParameterScope.Value] = [:]
            for parameter in template.parameters {
                values[parameter.name] = template.defaults[parameter.name] ?? TemplateParameterScope.Value(text: "", isPlaceholder: true)
            }
            let scope = TemplateParameterScope(template: template, values: values)
            let before = diagnostics.count
            let body = filledIn(template.body, scope: scope, reportsUnknown: true)
            parameterScope = scope
            _ = task(Located(name, at: template.location), YAMLNode(.mapping(body), at: Mark(line: template.location.line, column: template.location.column)), context: .template)
            parameterScope = nil
            for diagnostic in diagnostics[before...] { templateProblemLocations.insert(diagnostic.location) }
        }
        return templates
    }

    private mutating func parameters(_ node: YAMLNode, template: String) -> [TemplateParameter] {
        if case .scalar(let scalar) = node.content, scalar.isNull { return [] }
        guard let pairs = mapping(node, what: "the params of template '\(template)'") else { return [] }
        return pairs.compactMap { pair in
            guard let name = pair.key.scalar?.text else {
                error("a parameter name must be a plain string, found \(pair.key.kindDescription)", at: pair.key)
                return nil
            }
            if !Self.isValidParameterName(name) {
                error("'\(name)' is not a valid parameter name: use letters, digits, '_' and '-', starting with a letter or '_'", at: pair.key)
            }
            let isNull = pair.value.scalar?.isNull == true && pair.value.tag == nil
            if !isNull, pair.value.scalar == nil {
                error("the default of parameter '\(name)' must be a string or a number, found \(pair.value.kindDescription) (~ makes it required)", at: pair.value)
                return nil
            }
            return TemplateParameter(name: name, location: location(pair.key), defaultValue: isNull ? nil : pair.value)
        }
    }

    static func isValidParameterName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }
    }

    /// A parameter's value as written; parsed when it holds `${{ }}` (read at run time).
    private mutating func value(of node: YAMLNode) -> TemplateParameterScope.Value {
        let text = node.scalar.map { $0.isNull ? "" : $0.text } ?? ""
        let template = Self.firstRange(of: "${{", in: Substring(text)) != nil ? template(text, node: node) : nil
        return TemplateParameterScope.Value(text: text, node: node, template: template)
    }

    // MARK: - Calls

    /// A task written as `uses: TEMPLATE` (with `with:` and keys of its own).
    mutating func templateCall(_ name: Located<String>, _ node: YAMLNode, keys: (uses: YAMLNode.Pair?, with: YAMLNode.Pair?), context: TaskContext) -> TaskDefinition? {
        guard let uses = keys.uses else {
            if let with = keys.with {
                error("with: gives values to a template's parameters: add 'uses: TEMPLATE' (templates are declared under templates:)", at: with.key)
            }
            // Decoded without `with:`, so its other problems are reported too.
            let rest = (node.mapping ?? []).filter { $0.key.scalar?.text != "with" }
            return task(name, YAMLNode(.mapping(rest), at: node.mark, tag: node.tag), context: context)
        }
        guard let templateName = string(uses.value, what: "uses") else { return nil }
        guard expandedBytes <= Self.maxExpandedBytes else {
            if !reportedExpansionLimit {
                reportedExpansionLimit = true
                error("the template calls up to here fill in more than \(Self.maxExpandedBytes / 1024 / 1024) MiB of text; flowrun stops expanding calls (use env: or a script file for large shared text)", at: uses.key)
            }
            return nil
        }
        guard let template = taskTemplates[templateName] else {
            error(unknownTemplate(templateName), at: uses.value)
            return nil
        }

        // The call's values, then the defaults; a required one missing is an error.
        var values: [String: TemplateParameterScope.Value] = [:]
        var arguments: [(name: String, value: String)] = []
        var invalid = false
        if let with = keys.with?.value, !(with.scalar?.isNull ?? false) {
            for pair in mapping(with, what: "with") ?? [] {
                guard let parameter = pair.key.scalar?.text else { continue }
                guard template.parameter(named: parameter) != nil else {
                    let declared = template.parameters.map(\.name)
                    let list = declared.isEmpty ? "it has none" : "it has " + declared.joined(separator: ", ")
                    error("template '\(template.name)' has no parameter '\(parameter)'\(Suggestion.hint(for: parameter, in: declared)); \(list)", at: pair.key)
                    continue
                }
                // `os: ~`, `os: null`, `os:` give no value: a required parameter exists to catch exactly that.
                if template.parameter(named: parameter)?.isRequired == true, pair.value.scalar?.isNull == true, pair.value.tag == nil {
                    error("parameter '\(parameter)' of template '\(template.name)' is required but given null (\(Self.nullSpelling(pair.value, key: parameter))): give it a value (\"\" for an empty one)", at: pair.value)
                    invalid = true
                    values[parameter] = TemplateParameterScope.Value(text: "", isPlaceholder: true)
                    continue
                }
                guard pair.value.scalar != nil else {
                    error("the value of parameter '\(parameter)' must be a string or a number, found \(pair.value.kindDescription)", at: pair.value)
                    invalid = true
                    values[parameter] = TemplateParameterScope.Value(text: "", isPlaceholder: true)
                    continue
                }
                values[parameter] = value(of: pair.value)
            }
        }
        var missing: [String] = []
        for parameter in template.parameters {
            if let given = values[parameter.name] {
                arguments.append((parameter.name, given.text))
            } else if let filled = template.defaults[parameter.name] {
                values[parameter.name] = filled
                arguments.append((parameter.name, filled.text))
            } else {
                missing.append(parameter.name)
            }
        }
        if invalid { return nil }
        if !missing.isEmpty {
            let list = missing.map { "'\($0)'" }.joined(separator: ", ")
            error("template '\(template.name)' needs \(missing.count == 1 ? "parameter" : "parameters") \(list): add \(missing.count == 1 ? "it" : "them") under with:", at: uses.value)
            return nil
        }

        let scope = TemplateParameterScope(template: template, values: values)
        let own = (node.mapping ?? []).filter { $0.key.scalar?.text != "uses" && $0.key.scalar?.text != "with" }
        let merged = Self.merged(template: template.body, call: own)
        let before = diagnostics.count
        let filled = filledIn(merged, scope: scope, reportsUnknown: false)
        parameterScope = scope
        var task = task(name, YAMLNode(.mapping(filled), at: node.mark, tag: node.tag), context: context)
        parameterScope = nil
        // What is wrong in the template itself was reported once, where it is written.
        if diagnostics.count > before, !templateProblemLocations.isEmpty {
            let added = diagnostics[before...].filter { !templateProblemLocations.contains($0.location) }
            diagnostics.removeSubrange(before...)
            diagnostics += added
        }
        task?.templateCall = TemplateCall(template: template.name, arguments: arguments)
        return task
    }

    /// How a null was written, for messages: `~`, `null`, or nothing after the key.
    static func nullSpelling(_ node: YAMLNode, key: String) -> String {
        let text = node.scalar?.text ?? ""
        return text.isEmpty ? "nothing after '\(key):'" : text
    }

    private func unknownTemplate(_ name: String) -> String {
        let known = taskTemplates.keys.sorted()
        var message = "unknown template '\(name)'\(Suggestion.hint(for: name, in: known))"
        if let kind = names.kinds[name] {
            message += ": '\(name)' is a \(kind.rawValue); uses: names an entry of templates:"
        } else if known.isEmpty {
            message += ": declare it under templates:"
        } else {
            message += "; the templates are " + known.joined(separator: ", ")
        }
        return message
    }

    /// The template's keys with the call's over them: a call's action
    /// replaces the template's, its `env` adds to and overrides the
    /// template's variables, any other key replaces the template's.
    static func merged(template: [YAMLNode.Pair], call: [YAMLNode.Pair]) -> [YAMLNode.Pair] {
        let callKeys = call.compactMap { $0.key.scalar?.text }
        let callHasAction = callKeys.contains { actionKeys.contains($0) }
        var pairs: [YAMLNode.Pair] = []
        pairs.reserveCapacity(template.count + call.count)
        for pair in template {
            guard let key = pair.key.scalar?.text else { continue }
            if callHasAction && actionKeys.contains(key) { continue }
            if callKeys.contains(key) {
                guard key == "env", let mine = pair.value.mapping,
                      let theirs = call.first(where: { $0.key.scalar?.text == "env" }), let overriding = theirs.value.mapping else { continue }
                // Merged where the call's `env` is; the template's entries keep their own marks.
                let replaced = Set(overriding.compactMap { $0.key.scalar?.text })
                let kept = mine.filter { !replaced.contains($0.key.scalar?.text ?? "") }
                pairs.append(YAMLNode.Pair(key: theirs.key, value: YAMLNode(.mapping(kept + overriding), at: theirs.value.mark)))
                continue
            }
            pairs.append(pair)
        }
        for pair in call {
            if pair.key.scalar?.text == "env", pairs.contains(where: { $0.key.scalar?.text == "env" }) { continue }
            pairs.append(pair)
        }
        return pairs
    }

    // MARK: - Parameters as text

    /// The pairs with `${{ params.NAME }}` replaced by its value's text in
    /// every key that does not read expressions. Checking a template on its
    /// own, a key that needs a required parameter is left out.
    private mutating func filledIn(_ pairs: [YAMLNode.Pair], scope: TemplateParameterScope, reportsUnknown: Bool) -> [YAMLNode.Pair] {
        var result: [YAMLNode.Pair] = []
        result.reserveCapacity(pairs.count)
        for pair in pairs {
            guard let key = pair.key.scalar?.text, !Self.expressionTaskKeys.contains(key) else {
                result.append(pair)
                continue
            }
            if let value = filledIn(pair.value, scope: scope, reportsUnknown: reportsUnknown) {
                result.append(YAMLNode.Pair(key: pair.key, value: value))
            }
        }
        return result
    }

    private mutating func filledIn(_ node: YAMLNode, scope: TemplateParameterScope, reportsUnknown: Bool) -> YAMLNode? {
        switch node.content {
        case .scalar(let scalar):
            guard Self.firstRange(of: "${{", in: Substring(scalar.text)) != nil else { return node }
            return filledIn(scalar, of: node, scope: scope, reportsUnknown: reportsUnknown)
        case .sequence(let items):
            var filled: [YAMLNode] = []
            for item in items {
                guard let value = filledIn(item, scope: scope, reportsUnknown: reportsUnknown) else { return nil }
                filled.append(value)
            }
            return YAMLNode(.sequence(filled), at: node.mark, tag: node.tag)
        case .mapping(let pairs):
            var filled: [YAMLNode.Pair] = []
            for pair in pairs {
                guard let key = filledIn(pair.key, scope: scope, reportsUnknown: reportsUnknown),
                      let value = filledIn(pair.value, scope: scope, reportsUnknown: reportsUnknown) else { return nil }
                filled.append(YAMLNode.Pair(key: key, value: value))
            }
            return YAMLNode(.mapping(filled), at: node.mark, tag: node.tag)
        }
    }

    /// One scalar with its `${{ params.NAME }}` parts replaced; other `${{ }}` stay as written.
    private mutating func filledIn(_ scalar: YAMLScalar, of node: YAMLNode, scope: TemplateParameterScope, reportsUnknown: Bool) -> YAMLNode? {
        var text = ""
        var rest = Substring(scalar.text)
        var onlyValue: TemplateParameterScope.Value?
        /// The first value put in that has a place of its own (a call's `with:` entry or a default).
        var firstPlaced: TemplateParameterScope.Value?
        var replaced = 0
        while let open = Self.firstRange(of: "${{", in: rest) {
            guard let close = Self.firstRange(of: "}}", in: rest[open.upperBound...]) else { break }
            let inner = rest[open.upperBound..<close.lowerBound]
            text += rest[..<open.lowerBound]
            if let name = TemplateParameterScope.parameterName(in: inner) {
                guard let value = scope.values[name] else {
                    if reportsUnknown { error(scope.unknownParameter(name), at: node) }
                    return nil
                }
                if value.isPlaceholder { return nil }
                text += value.text
                replaced += 1
                onlyValue = value
                if firstPlaced == nil, value.node != nil { firstPlaced = value }
            } else {
                if reportsUnknown, Self.firstRange(of: "params.", in: inner) != nil {
                    error("in this key ${{ params.NAME }} can only stand alone, as text; it is not an expression here", at: node)
                }
                text += rest[open.lowerBound..<close.upperBound]
            }
            rest = rest[close.upperBound...]
        }
        text += rest
        guard replaced > 0 else { return node }
        expandedBytes += text.utf8.count
        // The text now holds the call's values: errors about it (an unknown
        // semaphore, `${{ }}` where none is read) point at the value that
        // made it, in the call, not at the template every call shares.
        let whole = replaced == 1 && onlyValue.map { text == $0.text } == true
        let mark = (whole ? onlyValue?.node?.mark : firstPlaced?.node?.mark) ?? node.mark
        // The template's quoting decides the type: `retries: ${{ params.n }}` is a number for `n: 3` and `n: "3"`.
        return YAMLNode(.scalar(YAMLScalar(text, style: scalar.style)), at: mark, tag: node.tag)
    }

    /// The first `target` in `text`, found in UTF-8 bytes.
    static func firstRange(of target: StaticString, in text: Substring) -> Range<Substring.Index>? {
        let utf8 = text.utf8
        let needle = UnsafeBufferPointer(start: target.utf8Start, count: target.utf8CodeUnitCount)
        guard let first = needle.first else { return nil }
        var from = utf8.startIndex
        while let start = utf8[from...].firstIndex(of: first) {
            if utf8[start...].starts(with: needle) { return start..<utf8.index(start, offsetBy: needle.count) }
            from = utf8.index(after: start)
        }
        return nil
    }
}

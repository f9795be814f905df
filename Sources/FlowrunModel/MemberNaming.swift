/// How a fan-out member gets its name (docs/FORMAT.md "Member names").
///
/// - With `name:` in the task template: that template, filled in.
/// - Without, a record known before the run (a `matrix:` combination or a
///   mapping in a literal `foreach` list): `GROUP[k=v,k=v]` — a matrix
///   combination by its values on the axes (in axis order), a mapping item by
///   all its scalar fields (in the order written; nested records as
///   `k.sub=v`).
/// - Otherwise `GROUP[INDEX]`, counting from 0: text items, ranges, and
///   anything read at run time (a JSON object can be any size and any
///   shape; its index is short and never collides).
///
/// Names depend only on the file (and `--var`), so they are the same on
/// every run, and `flowrun FILE 'test[os=linux,py=3.12]'` can name one.
package enum MemberNaming {
    /// The member's name for `item`, or nil when its `name:` reads a value
    /// only a run has (a task's output, `env.X`, or an expression with
    /// operators): then the engine fills the template in.
    ///
    /// `fieldNames`: whether a record without `name:` is named by its fields
    /// (true for static records); `axes`: a matrix's axes.
    /// `indexNamed`: a matrix combination whose axis values another shares
    /// (`indexNamed(_:axes:)`): without `name:`, it is `GROUP[INDEX]`.
    package static func name(
        group: String, item: FanOutItem, index: Int, template: Template?, fieldNames: Bool, axes: [String]?, vars: [Variable],
        indexNamed: Bool = false
    ) -> String? {
        if let template {
            guard let rendered = render(template, item: item, index: index, vars: vars) else { return nil }
            // A name that is empty or cannot be passed on (a NUL byte) keeps the GROUP[INDEX] form.
            if rendered.isEmpty || rendered.utf8.contains(0) || rendered.utf8.count > maximumLength { return "\(group)[\(index)]" }
            return rendered
        }
        if indexNamed { return "\(group)[\(index)]" }
        return defaultName(group: group, item: item, index: index, fieldNames: fieldNames, axes: axes)
    }

    /// The matrix combinations named `GROUP[INDEX]` when the task has no
    /// `name:`: those whose values on the axes repeat another's — `include`
    /// entries that differ only in keys that are not axes (GitHub runs them
    /// all). Empty for anything but a matrix.
    package static func indexNamed(_ source: FanOutSource, axes: [String]?) -> Set<Int> {
        guard let axes, !axes.isEmpty, case .records(let items) = source else { return [] }
        var first: [String: Int] = [:]
        var repeated = Set<Int>()
        for (index, item) in items.enumerated() {
            let name = defaultName(group: "", item: item, index: index, fieldNames: true, axes: axes)
            if let earlier = first[name] {
                repeated.insert(earlier)
                repeated.insert(index)
            } else {
                first[name] = index
            }
        }
        return repeated
    }

    /// The longest name a `name:` may give (longer falls back to `GROUP[INDEX]`), as for any value: 1 MiB.
    package static let maximumLength = 1 << 20

    /// `GROUP[k=v,…]` for a static record, else `GROUP[INDEX]`.
    package static func defaultName(group: String, item: FanOutItem, index: Int, fieldNames: Bool, axes: [String]?) -> String {
        guard fieldNames, case .record(let fields) = item else { return "\(group)[\(index)]" }
        var parts: [String] = []
        if let axes {
            for axis in axes {
                if let field = fields.last(where: { $0.key == axis }) { append(field.key, field.value, to: &parts) }
            }
        }
        if parts.isEmpty {
            for field in fields { append(field.key, field.value, to: &parts) }
        }
        return parts.isEmpty ? "\(group)[\(index)]" : "\(group)[" + parts.joined(separator: ",") + "]"
    }

    private static func append(_ key: String, _ value: FanOutItem, to parts: inout [String]) {
        switch value {
        case .text(let text), .literal(let text): parts.append(key + "=" + text)
        case .record(let fields): for field in fields { append(key + "." + field.key, field.value, to: &parts) }
        case .list: break
        }
    }

    /// The names of a fan-out's members when they are known before the run:
    /// a literal list, a range or a matrix, with no `name:` or one that reads
    /// only `item`, `item.KEY`, `index` and `vars`. Nil otherwise.
    package static func staticNames(of group: GroupDefinition, vars: [Variable]) -> [String]? {
        guard let fanOut = group.fanOut else { return nil }
        return staticNames(group: group.name, source: fanOut.source, template: fanOut.template.nameTemplate, axes: fanOut.matrixAxes, vars: vars)
    }

    /// `staticNames(of:vars:)` from a fan-out's parts (as a plan step holds them).
    package static func staticNames(group: String, source: FanOutSource, template: Template?, axes: [String]?, vars: [Variable]) -> [String]? {
        guard let count = source.staticCount else { return nil }
        var names: [String] = []
        names.reserveCapacity(count)
        let indexNamed = template == nil ? indexNamed(source, axes: axes) : []
        for index in 0..<count {
            guard let member = staticMember(index, group: group, source: source, template: template, axes: axes, vars: vars, indexNamed: indexNamed) else {
                return nil
            }
            names.append(member.name)
        }
        return names
    }

    /// Member `index` of a fan-out whose items are known before the run:
    /// the name it runs under and its item (a range's `low + index`). Nil
    /// for a computed `foreach`, an index past the items, or a `name:` that
    /// reads a value only a run has. What `--dry-run` and `resume --from`
    /// call a member a target named (`g[3]` of `range: [100, 200]` is item 103).
    /// `indexNamed`: `indexNamed(source, axes:)` when the caller has it already.
    package static func staticMember(
        _ index: Int, group: String, source: FanOutSource, template: Template?, axes: [String]?, vars: [Variable], indexNamed: Set<Int>? = nil
    ) -> (name: String, item: FanOutItem)? {
        let item: FanOutItem
        let fieldNames: Bool
        switch source {
        case .expression:
            return nil
        case .list(let items):
            guard items.indices.contains(index) else { return nil }
            (item, fieldNames) = (.text(items[index]), false)
        case .records(let items):
            guard items.indices.contains(index) else { return nil }
            (item, fieldNames) = (items[index], true)
        case .range(let low, let high):
            guard index >= 0, index <= high - low else { return nil }
            (item, fieldNames) = (.text(String(low + index)), false)
        }
        let repeated = template == nil && fieldNames && (indexNamed ?? Self.indexNamed(source, axes: axes)).contains(index)
        guard let name = name(group: group, item: item, index: index, template: template, fieldNames: fieldNames, axes: fieldNames ? axes : nil, vars: vars,
                              indexNamed: repeated) else {
            return nil
        }
        return (name, item)
    }

    /// Fills in a `name:` that reads only what is known without a run; nil otherwise.
    package static func render(_ template: Template, item: FanOutItem, index: Int, vars: [Variable]) -> String? {
        var result = ""
        for segment in template.segments {
            switch segment {
            case .text(let text):
                result += text
            case .expression(.operand(let operand), _):
                switch operand.path {
                case .item:
                    // A record's text is its JSON, which the engine writes.
                    guard let text = item.scalarText else { return nil }
                    result += text
                case .itemField(let path):
                    guard let value = item.field(at: path) else { break }  // no such field: ''
                    guard let text = value.scalarText else { return nil }
                    result += text
                case .index:
                    result += String(index)
                case .variable(let name):
                    result += vars.last { $0.name == name }?.value ?? ""
                default:
                    return nil
                }
            case .expression:
                return nil
            }
        }
        return result
    }
}

extension MemberNaming {
    /// Whether a `name:` reads only what is known without a run (`item`,
    /// `item.KEY`, `index`, `vars`); no `name:` is static too.
    package static func namesAreStatic(template: Template?) -> Bool {
        guard let template else { return true }
        return template.segments.allSatisfy { segment in
            switch segment {
            case .text: return true
            case .expression(.operand(let operand), _):
                switch operand.path {
                case .item, .itemField, .index, .variable: return true
                default: return false
                }
            case .expression: return false
            }
        }
    }
}

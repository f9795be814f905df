/// The top-level `semaphores:` as lookups: pools declared by name, and
/// families (`"batch-*": 2`) that make one pool per matching name, each with
/// the family's capacity, when a task first names it (SPEC §15).
///
/// A name declared literally wins over a family. Two families that could
/// both match one name are a validation error (`overlaps`), so at most one
/// family matches any name and the answer never depends on the order written.
package struct SemaphoreTable: Sendable {
    /// The pool a name resolves to.
    package struct Pool: Sendable, Equatable {
        package var name: String
        package var capacity: Int
        /// The family that makes it (`batch-*`); nil for a literal pool.
        package var family: String?
    }

    private var literals: [String: Int] = [:]
    private var families: [(pattern: String, capacity: Int)] = []

    package init(_ declarations: [SemaphoreDeclaration]) {
        for declaration in declarations {
            if Self.isFamily(declaration.name) {
                if !families.contains(where: { $0.pattern == declaration.name }) { families.append((declaration.name, declaration.capacity)) }
            } else if literals[declaration.name] == nil {
                literals[declaration.name] = declaration.capacity
            }
        }
    }

    /// Whether a declared name is a family: it holds `*` (any run of characters).
    package static func isFamily(_ name: String) -> Bool { name.utf8.contains(UInt8(ascii: "*")) }

    /// No families: every lookup is a literal one.
    package var hasFamilies: Bool { !families.isEmpty }

    /// Every declared name, literal or family, for did-you-mean.
    package var declaredNames: [String] { Array(literals.keys) + families.map(\.pattern) }

    /// The pool `name` takes: the literal one, else the family's; nil when none matches.
    package func pool(named name: String) -> Pool? {
        if let capacity = literals[name] { return Pool(name: name, capacity: capacity, family: nil) }
        for family in families where Self.matches(family.pattern, name) {
            return Pool(name: name, capacity: family.capacity, family: family.pattern)
        }
        return nil
    }

    /// The pools a name computed at run time could take, as `pattern` reads
    /// it (`batch-*` for `batch-${{ item.batch }}`): the literal names it
    /// matches and the families that overlap it.
    package func candidates(forPattern pattern: String) -> [Pool] {
        var pools = literals.keys.sorted().filter { Self.matches(pattern, $0) }.map { Pool(name: $0, capacity: literals[$0]!, family: nil) }
        for family in families where Self.overlaps(family.pattern, pattern) {
            pools.append(Pool(name: family.pattern, capacity: family.capacity, family: family.pattern))
        }
        return pools
    }

    /// Whether `name` is one of the names `pattern` stands for (`*`: any run of bytes, none included).
    package static func matches(_ pattern: String, _ name: String) -> Bool {
        let pattern = Array(pattern.utf8), name = Array(name.utf8)
        var p = 0, n = 0
        var star: Int?, resume = 0
        while n < name.count {
            if p < pattern.count, pattern[p] == UInt8(ascii: "*") {
                star = p
                p += 1
                resume = n
            } else if p < pattern.count, pattern[p] == name[n] {
                p += 1
                n += 1
            } else if let star {
                // Let the last `*` take one more byte.
                p = star + 1
                resume += 1
                n = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }

    /// Whether some name matches both patterns: a walk over pairs of
    /// positions, where a `*` may stand for nothing or take the other's next byte.
    package static func overlaps(_ first: String, _ second: String) -> Bool {
        let a = Array(first.utf8), b = Array(second.utf8)
        let star = UInt8(ascii: "*")
        var seen = Set<Int>()
        var stack = [(0, 0)]
        while let (i, j) = stack.popLast() {
            if i == a.count && j == b.count { return true }
            guard seen.insert(i * (b.count + 1) + j).inserted else { continue }
            if i < a.count, a[i] == star {
                stack.append((i + 1, j))
                if j < b.count { stack.append((i, j + 1)) }
            }
            if j < b.count, b[j] == star {
                stack.append((i, j + 1))
                if i < a.count { stack.append((i + 1, j)) }
            }
            if i < a.count, j < b.count, a[i] != star, b[j] != star, a[i] == b[j] { stack.append((i + 1, j + 1)) }
        }
        return false
    }
}

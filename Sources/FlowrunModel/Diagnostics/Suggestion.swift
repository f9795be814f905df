/// "did you mean" — the nearest candidate by edit distance, if near enough.
package enum Suggestion {
    package static func nearest(to word: String, in candidates: some Sequence<String>) -> String? {
        let word = Array(word.lowercased().utf8)
        // Allow about one edit per three characters, at least one.
        let allowed = max(1, word.count / 3)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let other = Array(candidate.lowercased().utf8)
            // The length difference alone is a lower bound on the distance.
            guard abs(other.count - word.count) <= allowed else { continue }
            let limit = min(allowed, (best?.distance ?? .max) - 1)
            guard limit >= 0, let distance = editDistance(word, other, limit: limit) else { continue }
            best = (candidate, distance)
        }
        return best?.name
    }

    /// " (did you mean 'x'?)" or "".
    package static func hint(for word: String, in candidates: some Sequence<String>) -> String {
        nearest(to: word, in: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Damerau-Levenshtein distance (a swap of two neighbours counts as one
    /// edit), or nil as soon as it must exceed `limit`.
    static func editDistance(_ a: [UInt8], _ b: [UInt8], limit: Int = .max) -> Int? {
        if a.isEmpty { return b.count <= limit ? b.count : nil }
        if b.isEmpty { return a.count <= limit ? a.count : nil }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = [Int](repeating: 0, count: b.count + 1)
        for j in 0...b.count { previous[j] = j }
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previousPrevious[j - 2] + 1)
                }
                rowMinimum = min(rowMinimum, current[j])
            }
            // Every later row is at least this row's minimum.
            if rowMinimum > limit { return nil }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count] <= limit ? previous[b.count] : nil
    }
}

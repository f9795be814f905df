/// "did you mean" — the nearest candidate by edit distance, if near enough.
enum Suggestion {
    static func nearest(to word: String, in candidates: some Sequence<String>) -> String? {
        let word = Array(word.lowercased())
        // Allow about one edit per three characters, at least one.
        let allowed = max(1, word.count / 3)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            // The length difference alone is a lower bound on the distance.
            guard abs(candidate.count - word.count) <= allowed else { continue }
            let distance = editDistance(word, Array(candidate.lowercased()))
            if distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        guard let best, best.distance <= allowed else { return nil }
        return best.name
    }

    /// " (did you mean 'x'?)" or "".
    static func hint(for word: String, in candidates: some Sequence<String>) -> String {
        nearest(to: word, in: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Damerau-Levenshtein distance (a swap of two neighbours counts as one edit).
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previousPrevious[j - 2] + 1)
                }
            }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count]
    }
}

extension String {
    /// The parts one after another, written into one allocation. `a + b + c`
    /// grows the string at each `+`: for the paths and `KEY=VALUE` entries
    /// made for every task, that growing cost more than the copying.
    package init(joining parts: String...) {
        var total = 0
        for part in parts { total += part.utf8.count }
        self.init(unsafeUninitializedCapacity: total) { buffer in
            var offset = 0
            for var part in parts {
                part.withUTF8 { utf8 in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[offset...]).initialize(fromContentsOf: utf8)
                    offset += utf8.count
                }
            }
            return offset
        }
    }
}

/// URLs as flowrun shows them (SPEC §11): without the user:password part
/// and without query values, which is where tokens ride
/// (`https://***:***@host/path?token=***`). Used everywhere a URL is shown:
/// the dry run, the plan JSON, an `http:` task's log, errors.
package enum URLRedaction {
    package static func redact(_ url: String) -> String {
        var text = Substring(url)
        var result = ""
        // The fragment is the page's own, not sent: kept.
        var fragment = ""
        if let hash = text.firstIndex(of: "#") {
            fragment = String(text[hash...])
            text = text[..<hash]
        }
        var query: Substring?
        if let question = text.firstIndex(of: "?") {
            query = text[text.index(after: question)...]
            text = text[..<question]
        }
        if let schemeEnd = text.range(of: "://") {
            result += text[..<schemeEnd.upperBound]
            let rest = text[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                result += authority[..<at].contains(":") ? "***:***" : "***"
                result += authority[at...]
            } else {
                result += authority
            }
            result += rest[authorityEnd...]
        } else {
            result += text
        }
        if let query {
            result += "?"
            result += query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
                guard let equals = parameter.firstIndex(of: "=") else { return parameter.isEmpty ? "" : "***" }
                return parameter[..<equals] + (parameter[parameter.index(after: equals)...].isEmpty ? "=" : "=***")
            }.joined(separator: "&")
        }
        return result + fragment
    }
}

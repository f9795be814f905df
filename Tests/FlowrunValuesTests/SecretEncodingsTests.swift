import Foundation
import Testing
@testable import FlowrunValues

/// A secret is masked in the forms other programs print it in: each form is
/// checked against an encoder that is not ours (Foundation's).
@Suite struct SecretEncodingsTests {
    static let secrets = ["Tök/en+\"a&b<c>d 1234", "plain-token-42", "ключ 🔑 \\ \n\t", "abcd", "a/b?c=d&e"]

    /// Base64 of the secret between any bytes, at each of the three
    /// alignments, padded or not, standard or URL-safe: at most 3 characters
    /// before and 4 after the `***` remain, and no 6 in a row of the secret's own.
    @Test(arguments: secrets)
    func base64AtEveryAlignmentIsMasked(_ secret: String) throws {
        let masker = try #require(SecretMasker(values: [secret]))
        for lead in 0...5 {
            for trail in 0...3 {
                let bytes = Array("xyzuvw".utf8.prefix(lead)) + Array(secret.utf8) + Array("!?#".utf8.prefix(trail))
                let standard = Data(bytes).base64EncodedString()
                for encoded in [standard, standard.replacingOccurrences(of: "=", with: ""),
                                standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")] {
                    let masked = masker.mask("[\(encoded)]")
                    let bits = secret.utf8.count * 8 / 6
                    guard bits >= SecretEncodings.shortestBase64Fragment + 2 else { continue }
                    #expect(masked.contains("***"), "lead \(lead) trail \(trail): \(encoded) → \(masked)")
                    let visible = masked.replacingOccurrences(of: "***", with: "").count - 2
                    #expect(visible <= (lead + 2) / 3 * 4 + 1 + (trail + 2) / 3 * 4 + 5, "\(encoded) → \(masked)")
                }
            }
        }
    }

    @Test(arguments: secrets)
    func jsonAsFoundationWritesItIsMasked(_ secret: String) throws {
        let masker = try #require(SecretMasker(values: [secret]))
        // Foundation escapes `/` as `\/` (PHP's way); without it, jq's way.
        for options: JSONSerialization.WritingOptions in [[], [.withoutEscapingSlashes]] {
            let json = String(decoding: try JSONSerialization.data(withJSONObject: ["k": secret], options: options), as: UTF8.self)
            #expect(masker.mask(json) == #"{"k":"***"}"#, "\(json)")
        }
        // Python's ensure_ascii and Go's HTML escaping, written by hand.
        for nonASCII in [SecretEncodings.JSONNonASCII.lowerHex, .upperHex] {
            for html in [false, true] {
                let form = String(decoding: SecretEncodings.json(secret, escapingSlash: false, nonASCII: nonASCII, escapingHTML: html), as: UTF8.self)
                #expect(masker.mask("\"\(form)\"") == "\"***\"", "\(form)")
            }
        }
    }

    @Test(arguments: secrets)
    func urlEncodedFormsAreMasked(_ secret: String) throws {
        let masker = try #require(SecretMasker(values: [secret]))
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let percent = try #require(secret.addingPercentEncoding(withAllowedCharacters: unreserved))
        for form in [percent, percent.replacingOccurrences(of: "%20", with: "+"), percent.lowercased() == percent ? percent : Self.lowerHex(percent)] {
            #expect(masker.mask("?q=\(form)&x=1") == "?q=***&x=1", "\(form)")
        }
    }

    /// Text without a secret in any form passes untouched, and a secret's
    /// forms that equal the value add nothing.
    @Test func plainTextIsUntouchedAndPlainSecretsAddOnlyBase64() throws {
        let masker = try #require(SecretMasker(values: ["plain-token-42"]))
        let text = "plain-token-4 cGxhaW4tdG9rZW4tNA== %2F \\u0026 {\"k\":\"v\"}"
        #expect(masker.mask(text) == text)
        #expect(SecretEncodings.forms(of: "plain-token-42").allSatisfy { form in
            form.allSatisfy { byte in (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "+/=-_".utf8.contains(byte) }
        }, "only base64 forms for a secret of letters, digits and '-'")
    }

    static func lowerHex(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let percent = rest.firstIndex(of: "%") {
            result += rest[..<percent]
            let end = rest.index(percent, offsetBy: 3)
            result += rest[percent..<end].lowercased()
            rest = rest[end...]
        }
        return result + rest
    }
}

import Foundation
import FlowrunYAML
import Testing

/// Runs the loader over the official YAML test suite (vendored in
/// `Tests/Fixtures/yaml-test-suite`, MIT, origin in its ORIGIN.md; or the
/// folder in `YAML_TEST_SUITE`): every valid case must load to its
/// `in.json`, every `error` case must be refused with a mark inside the text.
///
/// Where libyaml 0.2.5 (or flowrun's deliberate strictness) disagrees with
/// the suite, the case is listed in `yaml-test-suite-known-differences.txt`
/// with a reason; a listed case that passes fails the test, so the list
/// cannot go stale.
@Suite struct YAMLTestSuiteTests {
    @Test func loaderAgreesWithTheYAMLTestSuite() throws {
        let suitePath = Self.suitePath
        guard FileManager.default.fileExists(atPath: suitePath + "/229Q/in.yaml") else {
            Issue.record("""
                the YAML test suite is missing at \(suitePath): expected the data release vendored \
                in Tests/Fixtures/yaml-test-suite or a folder in YAML_TEST_SUITE; the conformance test cannot run
                """)
            return
        }
        let cases = try SuiteCase.all(in: suitePath)
        let known = try Self.knownDifferences()
        #expect(cases.count >= 400, "found only \(cases.count) cases in \(suitePath)")

        let loader = YAMLLoader(allowsMultipleDocuments: true)
        let clock = ContinuousClock()
        var valid = 0, validPassed = 0, errors = 0, errorsRejected = 0, knownCount = 0
        for suiteCase in cases {
            var failure: String?
            let elapsed = clock.measure { failure = suiteCase.failure(loadedBy: loader) }
            #expect(elapsed < .seconds(1), "\(suiteCase.id): loading took \(elapsed)")

            if suiteCase.isError { errors += 1 } else { valid += 1 }
            switch (failure, known[suiteCase.id]) {
            case (nil, nil):
                if suiteCase.isError { errorsRejected += 1 } else { validPassed += 1 }
            case (nil, let reason?):
                Issue.record("\(suiteCase.id) now passes; remove its stale entry from the known differences (\(reason))")
            case (let failure?, nil):
                Issue.record("\(suiteCase.id) (\(suiteCase.title)): \(failure)")
            case (_?, _?):
                knownCount += 1
            }
        }
        for id in Set(known.keys).subtracting(cases.map(\.id)).sorted() {
            Issue.record("the known differences list \(id), which is not a case of the suite")
        }
        print("yaml-test-suite: \(validPassed)/\(valid) valid equal, \(errorsRejected)/\(errors) errors rejected, \(knownCount) known differences")
    }

    /// The vendored suite: `Tests/FlowrunYAMLTests/` → `Tests/Fixtures/yaml-test-suite`.
    static var suitePath: String {
        if let path = ProcessInfo.processInfo.environment["YAML_TEST_SUITE"], !path.isEmpty { return path }
        let projectRoot = testsFolder.split(separator: "/", omittingEmptySubsequences: false).dropLast(2).joined(separator: "/")
        return projectRoot + "/Tests/Fixtures/yaml-test-suite"
    }

    static var testsFolder: String {
        String(#filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/"))
    }

    /// `ID  reason` per line; `#` starts a comment line.
    static func knownDifferences() throws -> [String: String] {
        let text = try String(contentsOfFile: testsFolder + "/yaml-test-suite-known-differences.txt", encoding: .utf8)
        var entries: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.allSatisfy(\.isWhitespace) {
            let id = line.prefix { !$0.isWhitespace }
            let reason = line.dropFirst(id.count).trimmingCharacters(in: .whitespaces)
            #expect(!reason.isEmpty, "known difference \(id) gives no reason")
            #expect(entries[String(id)] == nil, "known difference \(id) is listed twice")
            entries[String(id)] = reason
        }
        return entries
    }
}

/// One case of the suite: a folder (or numbered subfolder) with `in.yaml`.
struct SuiteCase {
    enum Expectation {
        /// The documents must load to these values.
        case values([JSONValue])
        /// Valid YAML whose value JSON cannot hold (complex keys, …): it must load cleanly.
        case loads
        case error
    }

    /// `229Q`, or `2G84/00` for a numbered subcase.
    var id: String
    var title: String
    var yaml: [UInt8]
    var expectation: Expectation

    var isError: Bool {
        if case .error = expectation { return true }
        return false
    }

    static func all(in suitePath: String) throws -> [SuiteCase] {
        let files = FileManager.default
        var cases: [SuiteCase] = []
        for folder in try files.contentsOfDirectory(atPath: suitePath).sorted() {
            let path = suitePath + "/" + folder
            if files.fileExists(atPath: path + "/in.yaml") {
                cases.append(try SuiteCase(id: folder, path: path))
                continue
            }
            let subfolders = (try? files.contentsOfDirectory(atPath: path)) ?? []
            for sub in subfolders.sorted() where files.fileExists(atPath: path + "/" + sub + "/in.yaml") {
                cases.append(try SuiteCase(id: folder + "/" + sub, path: path + "/" + sub))
            }
        }
        return cases
    }

    init(id: String, path: String) throws {
        self.id = id
        let files = FileManager.default
        func bytes(_ name: String) throws -> [UInt8] {
            [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + "/" + name)))
        }
        yaml = try bytes("in.yaml")
        title = (try? String(decoding: bytes("==="), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? ""
        if files.fileExists(atPath: path + "/error") {
            expectation = .error
        } else if files.fileExists(atPath: path + "/in.json") {
            expectation = .values(try JSONValue.parseStream(try bytes("in.json")))
        } else {
            expectation = .loads
        }
    }

    /// Nil when the loader does what the suite asks, else what went wrong.
    func failure(loadedBy loader: YAMLLoader) -> String? {
        let result = loader.load(bytes: yaml)
        switch expectation {
        case .error:
            guard !result.problems.isEmpty else {
                return "accepted, but the suite says it is an error"
            }
            let lines = yaml.count { $0 == UInt8(ascii: "\n") } + 1
            for problem in result.problems where problem.mark.line < 1 || problem.mark.column < 1 || problem.mark.line > lines {
                return "refused, but at \(problem.mark), outside the text: \(problem.message)"
            }
            return nil
        case .loads:
            return result.problems.isEmpty ? nil : "refused: \(result.problems.map(\.description))"
        case .values(let expected):
            guard result.problems.isEmpty else { return "refused: \(result.problems.map(\.description))" }
            let loaded: [JSONValue]
            do {
                loaded = try result.documents.map { node throws(JSONValue.Unrepresentable) in try JSONValue(node) }
            } catch {
                return "loaded, but has no JSON form: \(error)"
            }
            return loaded == expected ? nil : "loaded \(loaded), expected \(expected)"
        }
    }
}

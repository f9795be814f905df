import Foundation
import Testing

extension RunEndToEnd {
    /// `--stream` hands on a line longer than 64 KiB in pieces; the newline
    /// that ended such a line, read after the piece was handed on, was a
    /// line of its own: an empty `task_output` the task never printed (or
    /// not, as the reads happened to split the output).
    @Suite struct StreamLongLineTests {
        @Test func aLongLineCutByTheStreamIsNotFollowedByAnEmptyLine() throws {
            let sandbox = try RunSandbox()
            // 70,000 bytes with no newline, which the pump reads (and the stream cuts) before the newline comes.
            let run = try sandbox.run("""
                tasks:
                  long:
                    run: |
                      head -c 70000 /dev/zero | tr '\\0' x; sleep 0.5; echo; echo end
                      head -c 70000 /dev/zero | tr '\\0' y >&2; sleep 0.5; echo >&2; echo fin >&2
                """, ["--stream"], output: "json")
            #expect(run.exitStatus == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["event"] as? String == "task_output" }
            for (stream, filler, last) in [("stdout", "x", "end"), ("stderr", "y", "fin")] {
                let texts = lines.filter { $0["stream"] as? String == stream }.compactMap { $0["line"] as? String }
                #expect(!texts.contains(""), "\(stream): an empty line the task never printed: \(texts.map { "\($0.prefix(10))… (\($0.count))" })")
                #expect(texts.last == last, "\(stream): \(texts.map { "\($0.prefix(10))… (\($0.count))" })")
                #expect(texts.dropLast().joined() == String(repeating: filler, count: 70_000), "\(stream): the long line's pieces")
            }
        }

        /// The piece is cut between characters: a 2-byte `é` that the reads
        /// split was shown as U+FFFD at the end of one piece and the start of
        /// the next.
        @Test func aLongLineIsCutBetweenCharacters() throws {
            let sandbox = try RunSandbox()
            // 32,768 `é` and the first byte of one more (65,537 bytes), then its second byte and two more `é`.
            let run = try sandbox.run("""
                tasks:
                  long:
                    run: |
                      yes é | tr -d '\\n' | head -c 65537; sleep 0.5; printf '\\251\\303\\251\\303\\251\\n'
                """, ["--stream"], output: "json")
            #expect(run.exitStatus == 0, "\(run.stderr)")
            let texts = run.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { $0["event"] as? String == "task_output" }.compactMap { $0["line"] as? String }
            let shown = texts.map { "\($0.prefix(3))…\($0.suffix(3)) (\($0.unicodeScalars.count))" }
            #expect(!texts.contains { $0.unicodeScalars.contains("\u{FFFD}") }, "\(shown)")
            #expect(texts.joined() == String(repeating: "é", count: 32_771), "\(shown)")
        }
    }
}

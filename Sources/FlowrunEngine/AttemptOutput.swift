import Dispatch
import Synchronization
import FlowrunRecord
import FlowrunValues

/// Where an attempt's output goes, whichever executor ran it: the engine
/// makes one per attempt (`RunEngine.makeOutput`), the executor hands it
/// chunks of stdout and stderr as they come, and it does the rest, the same
/// for a local process and a Slurm job: the task's log (secrets masked),
/// `--stream`'s lines and a `line` probe's, the stash's capture (the last
/// 1 MiB, spilled whole past it) and `::progress::` as `task_progress`.
///
/// One sink rather than a writer per executor: what a task's output means
/// does not depend on where it ran (a Slurm job's `::progress::` lines and a
/// 2 MiB stdout now behave as a local task's), and a fake executor in a test
/// drives stash and progress through it with no process. `http:` keeps its
/// own writer: a response body is not a process's stdout (no progress
/// lines, no stderr; its stash is the body as it came).
///
/// Threads: the local executor writes on the event loop's thread, Slurm on
/// the engine's queue at each poll. The state is behind a `Mutex`, so the
/// sink is `Sendable` whoever feeds it (one uncontended lock per chunk).
final class AttemptOutput: Sendable {
    enum Stream: Sendable { case stdout, stderr }

    /// What the output left once the attempt is over.
    struct Ending: Sendable {
        /// The stash's stdout (its last 1 MiB when longer: see `oversized`).
        var stdout: String
        var oversized: OversizedStdout?
        /// The log exists (something was written).
        var wroteLog: Bool
        /// Output that could not be kept (the log or the spill failed): the attempt fails with it.
        var problem: String?
    }

    private struct State: Sendable {
        var capture: StdoutCapture
        /// One masker per stream: a secret may be cut across two chunks of one.
        var stdoutMasking: SecretMaskingStream?
        var stderrMasking: SecretMaskingStream?
        /// `--stream`'s unfinished lines (at most 64 KiB each).
        var partialLine: [UInt8] = []
        var partialErrorLine: [UInt8] = []
        /// Whether the unfinished line was handed on at its 64 KiB (then emptied): the newline
        /// that ends it ends nothing more, not an empty line of its own.
        var partialLineCut = false
        var partialErrorLineCut = false
        var lastProgress = -1
        var closed = false
    }

    let log: TaskLog
    private let state: Mutex<State>
    private let masker: SecretMasker?
    /// Each whole line (true: of stderr), on the writer's thread; nil: lines are not even split.
    private let onLine: (@Sendable (String, Bool) -> Void)?
    /// Whole-percent changes, on `queue`.
    private let onProgress: @Sendable (Int) -> Void
    private let queue: DispatchQueue

    init(log: TaskLog, capture: StdoutCapture, masker: SecretMasker?, queue: DispatchQueue,
         onLine: (@Sendable (String, Bool) -> Void)?, onProgress: @escaping @Sendable (Int) -> Void) {
        self.log = log
        self.masker = masker
        self.queue = queue
        self.onLine = onLine
        self.onProgress = onProgress
        state = Mutex(State(capture: capture, stdoutMasking: masker?.stream(), stderrMasking: masker?.stream()))
    }

    /// The next chunk of `stream`, split anywhere.
    func write(_ chunk: UnsafeRawBufferPointer, _ stream: Stream) {
        state.withLock { state in
            switch stream {
            case .stdout:
                show(chunk, through: state.stdoutMasking) { shown in
                    log.write(shown)
                    if onLine != nil { streamLines(shown, into: &state.partialLine, cut: &state.partialLineCut, isError: false) }
                }
                if let progress = state.capture.append(chunk) { report(progress, &state) }
            case .stderr:
                show(chunk, through: state.stderrMasking) { shown in
                    log.write(shown)
                    if onLine != nil { streamLines(shown, into: &state.partialErrorLine, cut: &state.partialErrorLineCut, isError: true) }
                }
            }
        }
    }

    /// `stream` has ended: what its masker held back, its last partial line, the last progress value.
    func end(_ stream: Stream) {
        state.withLock { state in
            switch stream {
            case .stdout:
                state.stdoutMasking?.finish { shown in
                    log.write(shown)
                    if onLine != nil { streamLines(shown, into: &state.partialLine, cut: &state.partialLineCut, isError: false) }
                }
                state.stdoutMasking = nil
                if let onLine, !state.partialLine.isEmpty { onLine(String(decoding: state.partialLine, as: UTF8.self), false) }
                state.partialLine = []
                if let progress = state.capture.finish() { report(progress, &state) }
            case .stderr:
                state.stderrMasking?.finish { log.write($0) }
                state.stderrMasking = nil
                if let onLine, !state.partialErrorLine.isEmpty { onLine(String(decoding: state.partialErrorLine, as: UTF8.self), true) }
                state.partialErrorLine = []
            }
        }
    }

    /// A line flowrun itself writes to the log ("flowrun: …"), secrets masked.
    func note(_ text: String) {
        log.write(masker?.mask(text) ?? text)
    }

    /// Ends the output (once; later calls give the same ending without
    /// closing again): the log closed, the stash taken. Call after every
    /// chunk and `note`, with both streams ended.
    func close() -> Ending {
        state.withLock { state in
            if !state.closed {
                state.closed = true
                // Closed first: a small log is written to the pack only now, and may fail.
                log.close()
            }
            var ending = Ending(stdout: state.capture.stash, wroteLog: log.exists, problem: log.problem ?? state.capture.spillProblem)
            if state.capture.valueByteCount > ValueLimit.bytes {
                ending.oversized = OversizedStdout(byteCount: state.capture.valueByteCount, file: state.capture.spilledPath)
                ending.stdout = ValueLimit.tail(ending.stdout)  // shown in the summary and join blocks, never used as the value
            }
            return ending
        }
    }

    /// Output as it may be shown, secrets masked (a few bytes that may begin one wait for the next chunk).
    private func show(_ chunk: UnsafeRawBufferPointer, through masking: SecretMaskingStream?, _ sink: (UnsafeRawBufferPointer) -> Void) {
        if let masking { masking.write(chunk, to: sink) } else { sink(chunk) }
    }

    /// Hands on whole lines, keeping a partial one (at most 64 KiB of it) for the next chunk.
    /// A line cut there ends with its newline, not with an empty line more (which came or not
    /// depending on where the reads split the output).
    private func streamLines(_ chunk: UnsafeRawBufferPointer, into partialLine: inout [UInt8], cut: inout Bool, isError: Bool) {
        guard let onLine else { return }
        var start = 0
        for (offset, byte) in chunk.enumerated() where byte == UInt8(ascii: "\n") {
            partialLine.append(contentsOf: chunk[start..<offset])
            let endsACutLine = cut && partialLine.isEmpty
            cut = false
            start = offset + 1
            if endsACutLine { continue }
            let line = String(decoding: partialLine, as: UTF8.self)
            partialLine.removeAll(keepingCapacity: true)
            if isError || !line.hasPrefix("::progress::") { onLine(line, isError) }
        }
        partialLine.append(contentsOf: chunk[start...])
        if partialLine.count > 64 * 1024 {
            // Cut between characters: a character the read split stays for the next piece (cut
            // inside it, both pieces showed U+FFFD where the task printed a valid character).
            let keep = Self.incompleteCharacterStart(partialLine)
            onLine(String(decoding: partialLine[..<keep], as: UTF8.self), isError)
            partialLine.removeSubrange(..<keep)
            cut = partialLine.isEmpty
        } else if !partialLine.isEmpty {
            cut = false
        }
    }

    /// Where a UTF-8 sequence that `bytes` ends before its end starts; `bytes.count` if none does.
    static func incompleteCharacterStart(_ bytes: [UInt8]) -> Int {
        var index = bytes.count - 1, continuations = 0
        while index >= 0, continuations < 3, bytes[index] & 0xC0 == 0x80 { index -= 1; continuations += 1 }
        guard index >= 0 else { return bytes.count }
        let lead = bytes[index]
        let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
        return length > continuations + 1 ? index : bytes.count
    }

    /// Forwards whole-percent changes only, to the engine's queue.
    private func report(_ value: Double, _ state: inout State) {
        let percent = Int(value.rounded(.down))
        guard percent != state.lastProgress else { return }
        state.lastProgress = percent
        queue.async { [onProgress] in onProgress(percent) }
    }
}

extension AttemptResult {
    /// The result with what the attempt's output left: the stash, whether
    /// a log exists, and output that could not be kept as a failure.
    mutating func take(_ ending: AttemptOutput.Ending) {
        stdout = ending.stdout
        oversizedStdout = ending.oversized
        wroteLog = ending.wroteLog
        if let problem = ending.problem {
            // Output that could not be kept is output lost: say so, and fail.
            status = status == .succeeded ? .failed : status
            reason = problem
        }
    }
}

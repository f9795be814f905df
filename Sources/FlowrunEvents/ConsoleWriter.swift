import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// flowrun's own output during a run (every console reporter: plain, the
/// live view, JSON lines, `--stream`), written so that the engine never
/// waits for whoever reads it (SPEC §7).
///
/// `write` only appends to a bounded buffer (1 MiB) and returns; one thread
/// per descriptor drains it with ordinary blocking writes. The descriptor is
/// never made non-blocking: it is often the caller's terminal, and
/// `O_NONBLOCK` would change it for the shell too. When the buffer is full
/// (the reader stalls), the text handed over is dropped whole — callers hand
/// over whole lines — and counted (a text larger than the whole buffer
/// still goes when nothing else waits). When a write fails (EPIPE: the reader
/// left; EFBIG, EIO, ENOSPC…), the writer stops writing to that descriptor
/// for good and counts what it did not write. The run record is not console
/// and never goes through here.
///
/// The writing thread blocks SIGPIPE and SIGXFSZ for itself, so a write to a
/// closed pipe or past a file size limit fails with an error on that thread
/// instead of killing flowrun, whatever the process's dispositions.
package final class ConsoleWriter: Sendable {
    /// Standard output: where every console reporter writes.
    package static let standardOutput = ConsoleWriter(descriptor: STDOUT_FILENO)
    /// Standard error: the closing "lines dropped" note.
    package static let standardError = ConsoleWriter(descriptor: STDERR_FILENO)

    /// Bytes waiting to be written at most; more and new text is dropped.
    package static let defaultCapacity = 1 << 20
    /// Bytes handed to one `write` at most: what a 115,200-baud serial console
    /// takes in 1.4 s, so even that reader is seen making progress within the stall.
    static let writeLimit = 16 << 10
    /// Bytes handed to one `write` at most when the descriptor is a pipe or a
    /// socket: PIPE_BUF, what a pipe takes in one piece. A longer write to a
    /// full pipe is split wherever the reader makes room, and another writer
    /// of the same pipe (a second flowrun, a `2>&1`) put its bytes inside our
    /// line ("cchatty | aaaa-line-511", the rest 65 lines later).
    static let pipeWriteLimit = 4096

    /// Lines dropped so far on stdout and stderr together.
    package static var droppedLines: Int {
        standardOutput.dropped + standardError.dropped
    }

    package let descriptor: Int32
    package let capacity: Int

    /// Everything the writing thread and the writers share, behind this one lock.
    private struct State {
        var pending: [UInt8] = []
        /// Bytes the thread took and is writing now.
        var inFlight = 0
        /// Newlines in `inFlight`'s bytes: the lines lost if the thread never finishes.
        var inFlightLines = 0
        var dropped = 0
        /// The errno of the write that failed; nothing is written after it.
        var failure: Int32?
        var threadStarted = false
        /// The thread waits for `wake`; a writer that finds it so signals once.
        var threadIdle = false
        /// The last time bytes reached the descriptor (or the thread started).
        var lastProgress = ContinuousClock.now
        /// Someone waits in `waitUntilWritten`: the thread signals `written` after its next write.
        var drainWaiting = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the writing thread after a write while `drainWaiting`.
    private let written = DispatchSemaphore(value: 0)

    /// stdout's or stderr's writer for 1 and 2, else a writer of its own.
    package static func shared(for descriptor: Int32) -> ConsoleWriter {
        switch descriptor {
        case STDOUT_FILENO: standardOutput
        case STDERR_FILENO: standardError
        default: ConsoleWriter(descriptor: descriptor)
        }
    }

    /// Whether this is stdout's or stderr's writer (drained by `settle`).
    package var isStandard: Bool { self === Self.standardOutput || self === Self.standardError }

    package init(descriptor: Int32, capacity: Int = ConsoleWriter.defaultCapacity) {
        self.descriptor = descriptor
        self.capacity = capacity
    }

    /// Lines this writer dropped (buffer full, reader gone, or given up at exit).
    package var dropped: Int { state.withLock { $0.dropped } }

    /// The errno of the failed write after which this writer stopped, if any.
    package var failure: Int32? { state.withLock { $0.failure } }

    /// Bytes handed over and not yet written.
    package var backlog: Int { state.withLock { $0.pending.count + $0.inFlight } }

    /// Queues `text`, which should be whole lines; false (and counted) when dropped.
    /// `lines`: what to count when dropped, if not the newlines in `text`
    /// (a live frame counts the lines it adds, not the region it redraws).
    @discardableResult
    package func write(_ text: String, countingAs lines: Int? = nil) -> Bool {
        var text = text
        return text.withUTF8 { write(UnsafeRawBufferPointer($0), countingAs: lines) }
    }

    @discardableResult
    package func write(_ bytes: UnsafeRawBufferPointer, countingAs lines: Int? = nil) -> Bool {
        guard !bytes.isEmpty else { return true }
        let (accepted, startThread, signal) = state.withLock { state -> (Bool, Bool, Bool) in
            let queued = state.pending.count + state.inFlight
            // Text larger than the whole buffer (a huge join block) still goes when nothing waits.
            guard state.failure == nil, queued + bytes.count <= capacity || queued == 0 else {
                state.dropped += lines ?? Self.lines(in: bytes)
                return (false, false, false)
            }
            state.pending.append(contentsOf: bytes)
            let start = !state.threadStarted
            state.threadStarted = true
            let signal = state.threadIdle
            state.threadIdle = false
            return (true, start, signal)
        }
        if startThread { startWriting() }
        if signal { wake.signal() }
        return accepted
    }

    /// Counts lines a caller dropped on its own because this writer was behind
    /// (the live view holds frames back rather than cut one in half).
    package func countDropped(lines: Int) {
        state.withLock { $0.dropped += lines }
    }

    /// Waits until everything handed over is written, the descriptor failed,
    /// or no byte got through for `stall` (or `limit` passed in all). What is
    /// left then is counted as dropped and abandoned. True when all was written.
    @discardableResult
    package func drain(stall: Duration = .seconds(2), limit: Duration = .seconds(10)) -> Bool {
        if waitUntilWritten(stall: stall, limit: limit) { return true }
        state.withLock { state in
            guard state.failure == nil else { return }
            state.dropped += Self.lines(in: state.pending) + state.inFlightLines
            state.pending = []
            state.inFlightLines = 0
            state.failure = EAGAIN  // given up on: nothing more is written
        }
        return false
    }

    /// Waits as `drain` does, but gives nothing up: true when all was written.
    /// Sleeps on `written` until the writing thread has written something
    /// (never polls: the last line of a run is often written a few
    /// microseconds after the run asks, and a poll's period would be added
    /// to every run's exit).
    @discardableResult
    package func waitUntilWritten(stall: Duration = .seconds(2), limit: Duration) -> Bool {
        let start = ContinuousClock.now
        while true {
            let (done, failed, lastProgress) = state.withLock { state in
                let done = state.failure != nil || (state.pending.isEmpty && state.inFlight == 0)
                state.drainWaiting = !done
                return (done, state.failure != nil, state.lastProgress)
            }
            if done { return !failed }
            let now = ContinuousClock.now
            let deadline = min(max(lastProgress, start) + stall, start + limit)
            if now >= deadline { return false }
            // A signal left over from an earlier wait only makes this loop look once more.
            _ = written.wait(timeout: .now() + .nanoseconds(Int((deadline - now) / .nanoseconds(1))))
        }
    }

    /// At the end of a run: drains stdout (bounded), then says on stderr how
    /// many console lines were dropped, if any, and drains that (bounded).
    /// Returns the lines dropped.
    @discardableResult
    package static func settle(stall: Duration = .seconds(2), limit: Duration = .seconds(10)) -> Int {
        standardOutput.drain(stall: stall, limit: limit)
        let dropped = droppedLines
        if dropped > 0 {
            // EPIPE: the reader left (`| head`); anything else is the output itself failing (`> /dev/full`).
            let why = standardOutput.failure.flatMap { $0 == EAGAIN ? nil : $0 }
                .map { ($0 == EPIPE ? "the reader went away" : "standard output failed") + " (\(String(cString: strerror($0))))" }
                ?? "the reader was not reading"
            standardError.write("flowrun: \(dropped) console line\(dropped == 1 ? "" : "s") dropped: \(why)\n")
        }
        standardError.drain(stall: stall, limit: limit)
        return dropped
    }

    // MARK: The writing thread

    private func startWriting() {
        startThread(named: "flowrun-console") { [self] in
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGPIPE)
            sigaddset(&signals, SIGXFSZ)
            pthread_sigmask(SIG_BLOCK, &signals, nil)
            writeForever(limit: Self.writeLimit(for: descriptor))
        }
    }

    /// The most one `write` to `descriptor` gets: `pipeWriteLimit` for a pipe or a socket, else `writeLimit`.
    static func writeLimit(for descriptor: Int32) -> Int {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return writeLimit }
        let type = info.st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFSOCK ? pipeWriteLimit : writeLimit
    }

    private func writeForever(limit: Int) {
        while true {
            let chunk = state.withLock { state -> [UInt8]? in
                guard state.failure == nil else { return nil }
                guard !state.pending.isEmpty else {
                    state.threadIdle = true
                    return []
                }
                let chunk = state.pending
                state.pending = []
                state.inFlight = chunk.count
                state.inFlightLines = Self.lines(in: chunk)
                return chunk
            }
            guard let chunk else { return }
            if chunk.isEmpty {
                wake.wait()
                continue
            }
            let failure = chunk.withUnsafeBytes { writeAll($0, limit: limit) }
            let waiting = state.withLock { state -> Bool in
                defer { state.drainWaiting = false }
                state.inFlight = 0
                if state.failure != nil {
                    // `drain` gave up on this writer and counted these lines already.
                } else if let failure {
                    state.dropped += failure.unwrittenLines + Self.lines(in: state.pending)
                    state.pending = []
                    state.failure = failure.errno
                } else {
                    state.lastProgress = ContinuousClock.now
                }
                state.inFlightLines = 0
                return state.drainWaiting
            }
            if waiting { written.signal() }
            if failure != nil { return }
        }
    }

    /// Writes every byte; on a failure, its errno and the lines not fully written.
    /// At most `writeLimit` bytes a call: a blocking write to a pipe returns only when
    /// all it was given is in the pipe, so a 1 MiB chunk to a reader taking 100 KB/s
    /// showed no progress for 10 s and `drain` gave up on a reader that was reading.
    /// (`limit`: `writeLimit`, or `pipeWriteLimit` for a pipe, whose writes up to it are never split.)
    private func writeAll(_ bytes: UnsafeRawBufferPointer, limit: Int) -> (errno: Int32, unwrittenLines: Int)? {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, Self.chunkLength(bytes[offset...], limit: limit))
            if written > 0 {
                // Lines now whole on the other side are no longer the ones lost if this stops here.
                let done = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + written])
                var ended = 0
                for byte in done where byte == UInt8(ascii: "\n") { ended += 1 }
                offset += written
                let givenUp = state.withLock { state -> Bool in
                    state.lastProgress = ContinuousClock.now
                    state.inFlightLines = max(0, state.inFlightLines - ended)
                    return state.failure != nil
                }
                // `drain` gave up on this writer (and counted the rest as dropped): nothing more.
                if givenUp { return nil }
                continue
            }
            let error = written < 0 ? errno : EIO
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK {
                // Someone else made the descriptor non-blocking: wait until it takes more.
                var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, 1000)
                continue
            }
            // A line cut in the middle counts as not written.
            let lineStart = bytes[..<offset].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
            return (error, Self.lines(in: UnsafeRawBufferPointer(rebasing: bytes[lineStart...])))
        }
        return nil
    }

    /// How much of `rest` one `write` gets: at most `limit`, ending at a
    /// line's end where the window holds one. A file opened `O_APPEND` (`>>`)
    /// takes each write whole, so another writer appending to it too lands
    /// between lines; a window cut mid-line put its line in the middle of
    /// ours ("chatty-line-2167-paddwriter-line-693-…").
    static func chunkLength(_ rest: UnsafeRawBufferPointer.SubSequence, limit: Int) -> Int {
        guard rest.count > limit else { return rest.count }
        let window = rest.prefix(limit)
        guard let lastNewline = window.lastIndex(of: UInt8(ascii: "\n")) else { return limit }
        return lastNewline + 1 - rest.startIndex
    }

    /// Newlines in `bytes`, at least 1 for a non-empty text without one.
    static func lines(in bytes: some Sequence<UInt8>) -> Int {
        var count = 0
        var any = false
        for byte in bytes {
            any = true
            if byte == UInt8(ascii: "\n") { count += 1 }
        }
        return any ? max(1, count) : 0
    }
}

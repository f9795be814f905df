#if FUZZING
/// The libFuzzer entry point; libFuzzer supplies `main`.
///
/// Built only with `-Xswiftc -DFUZZING` (see `Fuzz/run.sh`); the ordinary
/// build has `Replay` as its `@main` instead.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWorkflow(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    WorkflowFuzzer.exercise(bytes)
    return 0
}
#endif

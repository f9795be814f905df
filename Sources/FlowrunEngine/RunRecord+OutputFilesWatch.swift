import FlowrunRecord

extension RunRecord {
    /// Tells which attempts may have written their `$FLOWRUN_OUTPUT` file (nil: look for every one).
    /// Here, not in FlowrunRecord: the watch is the engine's (SIGIO, dnotify), the folder is the record's.
    func watchOutputFiles() -> OutputFilesWatch? {
        OutputFilesWatch(runDirectory: folder.pathForFlowrun, outputsDirectory: folder.pathForFlowrun + "/outputs")
    }
}

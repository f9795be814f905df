import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import FlowrunModel
import FlowrunValues
import FlowrunEvents
import FlowrunRecord

/// Tasks on Slurm (SPEC §12): the run's `SlurmSession`, made at the first
/// such attempt, and each attempt's job.
extension RunEngine {
    /// Whether task `index` runs on Slurm.
    func runsOnSlurm(_ index: Int) -> Bool {
        guard let task = nodes[index].definition?.value else { return false }
        return plan.workflow.executor(of: task) == .slurm
    }

    func makeSlurmAttempt(for index: Int, script: Template, completion: @escaping (AttemptResult) -> Void) -> any TaskAttempt {
        guard let session = slurmSessionMade() else {
            return FailedAttempt(reason: slurmProblem ?? "cannot use Slurm", queue: queue, completion: completion)
        }
        let name = nodes[index].name
        let attempt = nodes[index].attempt
        let task = nodes[index].definition!.value
        do throws(TemplateRenderError) {
            let rendered = try renderShell(script, for: index)
            let stem = String(joining: session.folder, "/", record.recordName(index: index, name: name), ".", String(attempt))
            let files = SlurmFiles(stem: stem)
            var environment: [(key: String, value: String)] = []
            for entry in plan.workflow.env { environment.append((entry.name, try renderText(entry.value, for: index))) }
            for entry in task.env { environment.append((entry.name, try renderText(entry.value, for: index))) }
            environment.append(("FLOWRUN_TASK", name))
            environment.append(("FLOWRUN_RUN_ID", record.runID))
            environment.append(("FLOWRUN_OUTPUT", files.output))
            environment.append(("FLOWRUN_ATTEMPT", String(attempt)))
            if let item = nodes[index].item { environment.append(("FLOWRUN_ITEM", item.text)) }
            if let position = nodes[index].index { environment.append(("FLOWRUN_INDEX", String(position))) }
            // As a local task's spawn refuses it: the job script's shell would drop the byte and
            // pass on another value (an item `a<NUL>b` reached the job as `ab`).
            if let entry = environment.first(where: { $0.key.utf8.contains(0) || $0.value.utf8.contains(0) }) {
                return FailedAttempt(
                    reason: "cannot start the job: environment entry \(entry.key) contains a NUL byte, which cannot be passed to a process",
                    queue: queue, completion: completion)
            }
            let cwd = try task.cwd.map { (cwd: Template) throws(TemplateRenderError) -> String in try renderText(cwd, for: index) }
            let here = Self.currentDirectory() ?? "/"
            let workingDirectory = cwd.map { $0.hasPrefix("/") ? $0 : here + "/" + $0 } ?? here
            let command: [String]
            var scriptFile: (text: String, executable: Bool)?
            switch ScriptLaunch.of(shell: task.shell, script: rendered) {
            case .shellCommand:
                command = plan.workflow.shellCommand + ["-c", rendered]
            case .interpreter(let words):
                command = words + [files.script]
                scriptFile = (rendered, false)
            case .shebang:
                command = [files.script]
                scriptFile = (rendered, true)
            }
            let spec = SlurmTaskSpec(
                command: command, scriptFile: scriptFile, environment: environment, workingDirectory: workingDirectory, files: files,
                memoryLimit: resources(of: index)?.memoryBytes, killGrace: plan.workflow.killGrace)
            let isFanOutMember = nodes[index].group.map { fanOuts[$0] != nil } == true && nodes[index].item != nil
            let concurrency = nodes[index].group.flatMap { group in resourceOfGroup[nodes[group].name].map { pool.capacity(of: $0) } }
            let job = SlurmExecutor.Job(
                spec: spec, task: name, batchKey: isFanOutMember ? nodes[index].group : nil,
                sbatchArguments: SlurmArguments.of(task, settings: plan.workflow.slurm, timeout: nodes[index].timeout, resources: resources(of: index)),
                concurrency: concurrency,
                onState: { [unowned self] attempt, state in slurmJobChanged(index, attempt, state) })
            return start(job, on: SlurmExecutor(session: session, queue: queue), for: index, completion: completion)
        } catch {
            return FailedAttempt(reason: error.description, queue: queue, completion: completion)
        }
    }

    /// The run's session, made at the first task on Slurm: its folder in the
    /// shared folder, and the supervisor told how to cancel every job of
    /// the run should the engine die.
    private func slurmSessionMade() -> SlurmSession? {
        if let slurmSession { return slurmSession }
        guard slurmProblem == nil else { return nil }
        guard let reaper else {
            slurmProblem = "cannot watch child processes: \(reaperProblem ?? "unknown error")"
            return nil
        }
        guard let tools = slurmTools else {
            slurmProblem = "executor: slurm needs sbatch, which is not on PATH"
            return nil
        }
        let base: String
        if let shared = plan.workflow.slurm?.sharedDir {
            // The jobs' scripts, exit files and outputs are read and run by path: every folder
            // of shared_dir must be one no other user can rename or replace entries in (as the
            // record's own folders), and flowrun's folder in it must be new, made here, and its own.
            // Else a user who can write shared_dir swaps in a folder of theirs and forges a
            // task's exit status and outputs, or edits its job script before Slurm runs it.
            let sharedDescriptor: Int32
            do throws(RecordBase.Refusal) {
                sharedDescriptor = try RecordBase.open(shared, making: false, for: .write)
            } catch {
                slurmProblem = Self.sharedDirProblem(error.description, shared: shared)
                return nil
            }
            defer { close(sharedDescriptor) }
            let name = "flowrun-\(record.runID)"
            if let problem = Self.makeOwnFolder(name, in: sharedDescriptor, shownAs: "\(shared)/\(name)") {
                slurmProblem = problem
                return nil
            }
            base = "\(shared)/\(name)"
        } else {
            base = Self.absolutePath(record.directory)
        }
        let folder = base + "/slurm"
        let baseDescriptor = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard baseDescriptor >= 0 else {
            slurmProblem = "cannot open \(base) for Slurm jobs: \(String(cString: strerror(errno)))"
            return nil
        }
        defer { close(baseDescriptor) }
        if let problem = Self.makeOwnFolder("slurm", in: baseDescriptor, shownAs: folder) {
            slurmProblem = problem
            return nil
        }
        let session = SlurmSession(
            queue: queue, reaper: reaper, tools: tools, environment: baseEnvironment.map { "\($0.key)=\($0.value)" },
            runID: record.runID, folder: folder)
        Supervisor.onEngineDeath(run: session.cancelEverythingCommand)
        slurmSession = session
        return session
    }

    /// Makes `name` in `parent`, `0700`, and checks that the folder there is
    /// the one just made (flowrun's user's, private, not a link); nil, or why not.
    /// One already there is refused: someone else may have made it first.
    static func makeOwnFolder(_ name: String, in parent: Int32, shownAs path: String) -> String? {
        guard mkdirat(parent, name, 0o700) == 0 else {
            if errno == EEXIST {
                return "cannot make \(path) for Slurm jobs: it is there already, and flowrun uses only a folder it made itself (another user could have made it)"
            }
            return "cannot make \(path) for Slurm jobs: \(String(cString: strerror(errno)))"
        }
        let made = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard made >= 0 else { return "cannot open \(path) right after making it: \(String(cString: strerror(errno)))" }
        defer { close(made) }
        var info = stat()
        guard fstat(made, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            return "\(path) was replaced right after flowrun made it; no job submitted"
        }
        if info.st_mode & 0o7777 != 0o700 { fchmod(made, 0o700) }
        return nil
    }

    /// The record folder's refusal, said of `slurm.shared_dir`.
    static func sharedDirProblem(_ description: String, shared: String) -> String {
        let text = description
            .replacing("refusing to write the run record under", with: "refusing to put Slurm jobs' files under slurm.shared_dir")
            .replacing("could redirect the record", with: "could swap in files that forge the jobs' exit status and outputs")
            .replacing("use --log-dir with a folder of yours", with: "use a shared_dir of yours")
        return text
    }

    /// A job's state changed: the live view shows `queued (slurm job N)` / `running on NODE`.
    private func slurmJobChanged(_ index: Int, _ attempt: SlurmAttempt, _ state: SlurmJobState) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard nodes.contains(index), nodes[index].status == .running, let jobID = attempt.jobID else { return }
        let text: String
        switch state.state {
        case "PENDING": text = "queued (slurm job \(jobID))"
        case "RUNNING": text = "running on \(state.node ?? "?") (slurm job \(jobID))"
        default: return
        }
        emit(event(.taskSlurm(.init(task: nodes[index].name, jobID: jobID, state: state.state, node: state.node, text: text))))
    }
}

extension Plan {
    /// The plan as a run needs it: without the workflow's own task, group,
    /// join and `finally` definitions. The steps carry what each task runs
    /// (one shared copy per task, which the engine's nodes point at) and the
    /// engine reads nothing else of them; kept, they would hold every task
    /// definition twice (~10 MB at 20,000 tasks). `--dry-run`, `graph` and
    /// `export` read the whole plan and never call this.
    package consuming func forRunning() -> Plan {
        workflow.tasks = []
        workflow.groups = []
        workflow.joins = []
        workflow.finally = []
        return self
    }
}

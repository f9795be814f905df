import FlowrunModel

/// Declared secrets on Argo: no value is ever written into the manifest.
/// An `env:` secret (and one flowrun takes from its caller) reaches the pod
/// from a Kubernetes Secret through `valueFrom.secretKeyRef`; a secret var,
/// which could only be a workflow parameter written out in full, is refused.
extension ArgoCompiler {
    /// The Kubernetes Secret the pods read secrets from, one key per name.
    var secretObjectName: String { ArgoNames.objectName(workflow.name) + "-secrets" }

    static func secretNames(of workflow: Workflow) -> Set<String> {
        Set(workflow.secrets.map(\.value))
    }

    /// Secrets flowrun takes from its caller's environment: neither a var nor any `env:` entry.
    static func callerSecrets(of workflow: Workflow) -> [String] {
        let tasks = workflow.tasks + workflow.finally + workflow.groups.flatMap { $0.members + ($0.fanOut.map { [$0.template] } ?? []) }
        let set = Set(workflow.env.map(\.name) + tasks.flatMap { $0.env.map(\.name) })
        let vars = Set(workflow.vars.map(\.name))
        var seen = Set<String>()
        return workflow.secrets.map(\.value).filter { !set.contains($0) && !vars.contains($0) && seen.insert($0).inserted }
    }

    /// Refuses secret vars; says which Kubernetes Secret to create for the others.
    mutating func checkSecrets() {
        var seen = Set<String>()
        for secret in workflow.secrets where seen.insert(secret.value).inserted {
            if let variable = workflow.vars.last(where: { $0.name == secret.value }) {
                problems.refuse(
                    "var '\(secret.value)' is a secret, and a var becomes a workflow parameter whose value the manifest would show; "
                        + "set it under env: instead (pods then read it from the Kubernetes Secret '\(secretObjectName)') and read $\(secret.value) in scripts",
                    at: variable.location)
            } else {
                problems.note(
                    "secret '\(secret.value)' is not written into the manifest: pods read it from the Kubernetes Secret '\(secretObjectName)'; "
                        + "create it before submitting: kubectl create secret generic \(secretObjectName) --from-literal=\(secret.value)=…",
                    at: secret.location)
            }
        }
    }
}

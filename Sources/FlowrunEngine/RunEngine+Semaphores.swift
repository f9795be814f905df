import FlowrunModel
import FlowrunValues

/// Semaphore pools made during the run: a family's pool when a task first
/// names it, and names computed from `${{ }}` when the task is ready (SPEC §15).
extension RunEngine {
    /// The pool resource of a semaphore name (`Scheduler.semaphoreResource`).
    func semaphoreResource(named name: String) -> Int? {
        scheduler.semaphoreResource(named: name)
    }

    /// Fills in the task's computed semaphore names and adds their pools to
    /// what it holds while running; the reason it cannot run otherwise (a
    /// name that matches no pool, weights its pool cannot hold).
    func takeComputedSemaphores(_ index: Int) -> String? {
        guard let task = nodes[index].definition else { return nil }
        var amounts: [Int: Int] = [:]
        for (resource, amount) in (nodes[index].demand ?? Self.runSlotOnly).pairs { amounts[resource] = amount }
        for use in task.value.semaphores {
            let name: String
            if let template = use.computedName {
                do throws(TemplateRenderError) {
                    name = try renderText(template, for: index)
                } catch {
                    return "semaphores: \(error.description)"
                }
            } else {
                name = use.name
            }
            guard let resource = semaphoreResource(named: name) else {
                return "semaphores: '\(use.name)' is '\(name)', which matches no declared semaphore or family; "
                    + "declare it, or a family like '\(use.namePattern)', under the top-level 'semaphores:'"
            }
            // A static use is in the demand already: only computed ones are added.
            if use.computedName != nil { amounts[resource, default: 0] += use.weight }
            if amounts[resource, default: 0] > pool.capacity(of: resource) {
                return "semaphores: '\(task.value.name)' takes \(amounts[resource, default: 0]) of semaphore '\(name)', which holds only \(pool.capacity(of: resource)): it could never run"
            }
        }
        nodes[index].demand = SlotPool.Demand(amounts: amounts)
        return nil
    }
}

/// A parsed `${{ ... }}` expression.
public indirect enum Expression: Sendable {
    case string(String)
    case number(Double)
    case boolean(Bool)
    case operand(Operand)
    case not(Expression)
    case binary(BinaryOperator, Expression, Expression)
    /// `format('v{0}', vars.version)`: a function of GitHub Actions' set (`ExpressionFunction`).
    case call(ExpressionFunction, [Expression])

    /// Every operand in the expression, left to right.
    public var operands: [Operand] {
        if case .operand(let operand) = self { return [operand] }
        var operands: [Operand] = []
        collectOperands(into: &operands)
        return operands
    }

    /// One array for the whole tree: concatenating per node cost an
    /// allocation per operator and call, read several times per task.
    private func collectOperands(into operands: inout [Operand]) {
        switch self {
        case .string, .number, .boolean: return
        case .operand(let operand): operands.append(operand)
        case .not(let inner): inner.collectOperands(into: &operands)
        case .binary(_, let left, let right):
            left.collectOperands(into: &operands)
            right.collectOperands(into: &operands)
        case .call(_, let arguments):
            for argument in arguments { argument.collectOperands(into: &operands) }
        }
    }

    /// True when the expression calls a function anywhere.
    public var callsFunction: Bool {
        switch self {
        case .string, .number, .boolean, .operand: return false
        case .not(let inner): return inner.callsFunction
        case .binary(_, let left, let right): return left.callsFunction || right.callsFunction
        case .call: return true
        }
    }
}

public enum BinaryOperator: String, Sendable, CaseIterable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case and = "&&", or = "||"
}

/// A value read at run time: `vars.x`, `tasks.T.outputs.K`, `item`, …
public struct Operand: Sendable {
    /// As written, e.g. `tasks.build.outputs.version`.
    public var text: String
    public var path: OperandPath
    public var location: SourceLocation

    package init(text: String, path: OperandPath, location: SourceLocation) {
        self.text = text
        self.path = path
        self.location = location
    }
}

/// What an operand reads.
public enum OperandPath: Sendable, Hashable {
    case variable(String)
    case environment(String)
    case task(String, TaskField)
    case group(String, GroupField)
    case join(String, JoinField)
    case item
    /// `item.KEY` (`item.a.b` reads into a nested record).
    case itemField([String])
    case index
    /// `host.os`, `host.arch`, `host.cpus`: facts of the machine flowrun runs on.
    case host(HostFact)
    /// `args`: the words after `--` on the command line (SPEC §15), filled
    /// in by the planner before a run (`Planner.fillArguments`).
    case arguments
    /// `args[N]`: word N (from 0) after `--`, one value ('' past the last
    /// word, as `"$N"` in sh), filled in by the planner like `args`.
    case argument(Int)

    /// The task, group or join the operand reads from, if any.
    public var referencedName: String? {
        switch self {
        case .task(let name, _), .group(let name, _), .join(let name, _): return name
        case .variable, .environment, .item, .itemField, .index, .host, .arguments, .argument: return nil
        }
    }

    /// True when the value exists only at run time (not in a dry run).
    public var needsRunTimeValue: Bool {
        switch self {
        case .variable, .host, .arguments, .argument: return false
        default: return true
        }
    }
}

/// What a task stashed.
public enum TaskField: Sendable, Hashable {
    case stdout, status, exitCode, duration
    case output(String)

    public static let names = ["stdout", "status", "exit_code", "duration", "outputs.KEY"]
}

/// What `host.` offers: known before the run, the same for every task.
public enum HostFact: String, Sendable, Hashable, CaseIterable {
    /// `linux`.
    case os
    /// The machine as `uname -m` names it: `x86_64`, `aarch64`, …
    case arch
    /// How many CPUs this process may run on (its affinity mask).
    case cpus
}

public enum GroupField: String, Sendable, Hashable, CaseIterable {
    case status, results
}

public enum JoinField: String, Sendable, Hashable, CaseIterable {
    case status
    case timedOut = "timed_out"
    case succeeded
}

extension OperandPath {
    /// `item.KEY`.
    public var isItemField: Bool {
        if case .itemField = self { return true }
        return false
    }
}

/// A parsed `${{ ... }}` expression.
public indirect enum Expression: Sendable {
    case string(String)
    case number(Double)
    case boolean(Bool)
    case operand(Operand)
    case not(Expression)
    case binary(BinaryOperator, Expression, Expression)

    /// Every operand in the expression, left to right.
    public var operands: [Operand] {
        switch self {
        case .string, .number, .boolean: return []
        case .operand(let operand): return [operand]
        case .not(let inner): return inner.operands
        case .binary(_, let left, let right): return left.operands + right.operands
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
    /// `args`: the words after `--` on the command line (SPEC §15), filled
    /// in by the planner before a run (`Planner.fillArguments`).
    case arguments

    /// The task, group or join the operand reads from, if any.
    public var referencedName: String? {
        switch self {
        case .task(let name, _), .group(let name, _), .join(let name, _): return name
        case .variable, .environment, .item, .itemField, .index, .arguments: return nil
        }
    }

    /// True when the value exists only at run time (not in a dry run).
    public var needsRunTimeValue: Bool {
        switch self {
        case .variable, .arguments: return false
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

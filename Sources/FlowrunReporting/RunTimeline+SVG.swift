import FlowrunModel

/// The run as a self-contained SVG Gantt chart (no script, no external
/// style or font): one row per slot lane, packed, each attempt a bar
/// coloured by status with a tooltip (`<title>`), the name written on bars
/// wide enough for it; below, how many tasks waited for slots over time, and
/// a row of markers for group and join completions and tasks that did not
/// run. Rows shrink as lanes grow, so a 1,000-task run behind 16 slots is
/// 16 rows of bars and stays a few hundred kilobytes.
///
/// Every bar and not-run marker is a `<rect>` with `data-task` and
/// `data-attempt` (0: did not run), so tools and tests can find each task.
extension RunTimeline {
    private struct Layout {
        static let width = 1200.0
        static let left = 96.0
        static let right = 24.0
        static let plotWidth = width - left - right
        static let top = 58.0
        static let waitingHeight = 44.0
        static let markerHeight = 18.0

        var rowHeight: Double
        var lanes: Int
        var duration: Double

        init(lanes: Int, duration: Double) {
            self.lanes = max(1, lanes)
            self.duration = max(duration, 0.001)
            rowHeight = lanes <= 32 ? 20 : max(3, (640 / Double(lanes)).rounded(.down))
        }

        func x(_ time: Double) -> Double { Self.left + min(max(time, 0), duration) / duration * Self.plotWidth }
        func y(lane: Int) -> Double { Self.top + Double(lane) * rowHeight }
        var lanesBottom: Double { y(lane: lanes) }
        var waitingTop: Double { lanesBottom + 14 }
        var markersTop: Double { waitingTop + Self.waitingHeight + 12 }
        var legendTop: Double { markersTop + Self.markerHeight + 18 }
        var height: Double { legendTop + 24 }
    }

    /// Fill colours by status; `running` is an attempt still going in a live run.
    static let statusColours: [(status: String, colour: String)] = [
        ("succeeded", "#43a047"), ("failed", "#e53935"), ("timed_out", "#fb8c00"), ("cancelled", "#9e9e9e"),
        ("skipped", "#cfd8dc"), ("up_to_date", "#80cbc4"), ("running", "#1e88e5"),
    ]

    package var svg: String {
        let layout = Layout(lanes: slotLanes, duration: end)
        var out = ""
        out.reserveCapacity(4096 + attempts.count * 260 + instants.count * 160)
        let width = Self.number(Layout.width), height = Self.number(layout.height)
        out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" font-family=\"sans-serif\" font-size=\"11\">\n"
        out += "<style>\n"
        out += "text{fill:#263238}.axis{stroke:#eceff1}.label{fill:#546e7a}.name{fill:#fff;font-size:10px;pointer-events:none}"
        out += ".waiting{fill:#ffe082;stroke:#ffb300}.marker{stroke:#37474f;stroke-width:1.5}.lane{fill:#fafafa}.attempts rect{stroke:#fff;stroke-width:0.5}\n"
        for (status, colour) in Self.statusColours { out += ".\(status){fill:\(colour)}" }
        out += "\n</style>\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"

        let title = (workflow.isEmpty ? "run" : workflow) + (runID.isEmpty ? "" : " · " + runID)
            + " · " + Self.durationText(end) + (isFinished ? "" : " (live)")
            + " · " + Self.taskCount(Set(attempts.map(\.task)).count + instants.filter { $0.kind == .notRun }.count)
        out += "<text x=\"\(Self.number(Layout.left))\" y=\"18\" font-size=\"13\" font-weight=\"bold\">\(Self.escaped(title))</text>\n"
        appendAxis(layout, to: &out)

        out += "<g class=\"lanes\">\n"
        for lane in 0..<layout.lanes where lane % 2 == 1 {
            out += "<rect class=\"lane\" x=\"\(Self.number(Layout.left))\" y=\"\(Self.number(layout.y(lane: lane)))\" width=\"\(Self.number(Layout.plotWidth))\" height=\"\(Self.number(layout.rowHeight))\"/>\n"
        }
        if layout.rowHeight >= 10 {
            for lane in 0..<layout.lanes {
                out += "<text class=\"label\" x=\"\(Self.number(Layout.left - 8))\" y=\"\(Self.number(layout.y(lane: lane) + layout.rowHeight / 2 + 4))\" text-anchor=\"end\">slot \(lane + 1)</text>\n"
            }
        } else {
            out += "<text class=\"label\" x=\"\(Self.number(Layout.left - 8))\" y=\"\(Self.number(layout.y(lane: 0) + 10))\" text-anchor=\"end\">\(layout.lanes) slots</text>\n"
        }
        out += "</g>\n<g class=\"attempts\">\n"
        let gap = layout.rowHeight >= 6 ? 1.0 : 0
        for attempt in attempts {
            let x = layout.x(attempt.start)
            let barWidth = max(1, layout.x(attempt.end) - x)
            let y = layout.y(lane: attempt.lane) + gap
            let barHeight = layout.rowHeight - 2 * gap
            var tooltip = "\(attempt.task) · \(attempt.status)"
            if attempt.attempt > 1 { tooltip += " · attempt \(attempt.attempt)" }
            tooltip += " · " + Self.durationText(attempt.start) + "–" + Self.durationText(attempt.end)
                + " (" + Self.durationText(attempt.end - attempt.start) + ")"
            if let code = attempt.exitCode { tooltip += " · exit \(code)" }
            if let signal = attempt.signal { tooltip += " · signal \(signal)" }
            if let reason = attempt.reason { tooltip += " · " + reason }
            if let cpu = attempt.cpuSeconds { tooltip += " · cpu " + Self.durationText(cpu) }
            if let peak = attempt.peakMemoryBytes { tooltip += " · peak mem " + ByteSize.text(peak) }
            if let group = attempt.group { tooltip += " · group " + group }
            if let needs = needs[attempt.task], attempt.attempt == 1 { tooltip += " · needs " + needs.joined(separator: ", ") }
            out += "<rect class=\"\(Self.statusClass(attempt.status))\" data-task=\"\(Self.escaped(attempt.task))\" data-attempt=\"\(attempt.attempt)\""
            out += " x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(barWidth))\" height=\"\(Self.number(barHeight))\"><title>\(Self.escaped(tooltip))</title></rect>\n"
            // A name only where it fits (about 6 px a character at 10 px).
            let label = attempt.attempt > 1 ? "\(attempt.task) #\(attempt.attempt)" : attempt.task
            if layout.rowHeight >= 14, barWidth >= Double(label.count) * 6 + 6 {
                out += "<text class=\"name\" x=\"\(Self.number(x + 3))\" y=\"\(Self.number(y + barHeight / 2 + 3.5))\">\(Self.escaped(label))</text>\n"
            }
        }
        out += "</g>\n"
        appendWaiting(layout, to: &out)
        appendMarkers(layout, to: &out)
        appendLegend(layout, to: &out)
        out += "</svg>\n"
        return out
    }

    private func appendAxis(_ layout: Layout, to out: inout String) {
        let step = Self.tickStep(for: layout.duration)
        out += "<g class=\"time-axis\">\n"
        var tick = 0.0
        while tick <= layout.duration + step / 1000 {
            let x = Self.number(layout.x(tick))
            out += "<line class=\"axis\" x1=\"\(x)\" y1=\"\(Self.number(Layout.top - 6))\" x2=\"\(x)\" y2=\"\(Self.number(layout.markersTop + Layout.markerHeight))\"/>"
            out += "<text class=\"label\" x=\"\(x)\" y=\"\(Self.number(Layout.top - 10))\" text-anchor=\"middle\">\(Self.durationText(tick))</text>\n"
            tick += step
        }
        out += "</g>\n"
    }

    /// How many tasks waited for slots or semaphores, as a step area.
    private func appendWaiting(_ layout: Layout, to out: inout String) {
        let slotWaits = waits.filter { $0.kind == .slots }
        var changes: [(time: Double, delta: Int)] = slotWaits.flatMap { [($0.start, 1), ($0.end, -1)] }
        changes.sort { ($0.time, $0.delta) < ($1.time, $1.delta) }
        var count = 0, peak = 0
        var steps: [(time: Double, count: Int)] = [(0, 0)]
        for change in changes {
            count += change.delta
            peak = max(peak, count)
            steps.append((change.time, count))
        }
        let top = layout.waitingTop, bottom = layout.waitingTop + Layout.waitingHeight
        out += "<g class=\"waiting-chart\">\n"
        out += "<text class=\"label\" x=\"\(Self.number(Layout.left - 8))\" y=\"\(Self.number(top + 12))\" text-anchor=\"end\">waiting</text>"
        out += "<text class=\"label\" x=\"\(Self.number(Layout.left - 8))\" y=\"\(Self.number(top + 25))\" text-anchor=\"end\">max \(peak)</text>\n"
        out += "<line class=\"axis\" x1=\"\(Self.number(Layout.left))\" y1=\"\(Self.number(bottom))\" x2=\"\(Self.number(Layout.left + Layout.plotWidth))\" y2=\"\(Self.number(bottom))\"/>\n"
        if peak > 0 {
            func y(_ value: Int) -> String { Self.number(bottom - Double(value) / Double(peak) * (Layout.waitingHeight - 4)) }
            var points = "\(Self.number(layout.x(0))),\(y(0))"
            var previous = 0
            for step in steps {
                let x = Self.number(layout.x(step.time))
                points += " \(x),\(y(previous)) \(x),\(y(step.count))"
                previous = step.count
            }
            points += " \(Self.number(layout.x(layout.duration))),\(y(previous)) \(Self.number(layout.x(layout.duration))),\(y(0))"
            out += "<polygon class=\"waiting\" points=\"\(points)\"><title>tasks waiting for slots or semaphores (at most \(peak) at once)</title></polygon>\n"
        }
        out += "</g>\n"
    }

    /// Group and join completions (a tick with a tooltip) and tasks that
    /// settled without running (a small bar in their status's colour).
    private func appendMarkers(_ layout: Layout, to out: inout String) {
        let top = layout.markersTop
        out += "<g class=\"markers\">\n"
        out += "<text class=\"label\" x=\"\(Self.number(Layout.left - 8))\" y=\"\(Self.number(top + 12))\" text-anchor=\"end\">events</text>\n"
        for instant in instants {
            let x = Self.number(layout.x(instant.time))
            switch instant.kind {
            case .notRun:
                let tooltip = "\(instant.name) · \(instant.status) at \(Self.durationText(instant.time))" + (instant.detail.map { " · " + $0 } ?? "")
                out += "<rect class=\"\(Self.statusClass(instant.status))\" data-task=\"\(Self.escaped(instant.name))\" data-attempt=\"0\""
                out += " x=\"\(x)\" y=\"\(Self.number(top + 4))\" width=\"3\" height=\"\(Self.number(Layout.markerHeight - 8))\"><title>\(Self.escaped(tooltip))</title></rect>\n"
            case .group, .join:
                let tooltip = "\(instant.kind.rawValue) \(instant.name) · \(instant.status) at \(Self.durationText(instant.time))" + (instant.detail.map { " · " + $0 } ?? "")
                out += "<line class=\"marker\" data-\(instant.kind.rawValue)=\"\(Self.escaped(instant.name))\" x1=\"\(x)\" y1=\"\(Self.number(top))\" x2=\"\(x)\" y2=\"\(Self.number(top + Layout.markerHeight))\"><title>\(Self.escaped(tooltip))</title></line>\n"
            }
        }
        out += "</g>\n"
    }

    private func appendLegend(_ layout: Layout, to out: inout String) {
        var x = Layout.left
        let y = layout.legendTop
        out += "<g class=\"legend\">\n"
        for (status, _) in Self.statusColours {
            out += "<rect class=\"\(status)\" x=\"\(Self.number(x))\" y=\"\(Self.number(y - 9))\" width=\"10\" height=\"10\"/>"
            out += "<text x=\"\(Self.number(x + 14))\" y=\"\(Self.number(y))\">\(status.replacing("_", with: " "))</text>\n"
            x += 14 + Double(status.count) * 6.5 + 14
        }
        out += "<rect class=\"waiting\" x=\"\(Self.number(x))\" y=\"\(Self.number(y - 9))\" width=\"10\" height=\"10\"/><text x=\"\(Self.number(x + 14))\" y=\"\(Self.number(y))\">waiting for slots</text>\n"
        x += 130
        out += "<line class=\"marker\" x1=\"\(Self.number(x + 5))\" y1=\"\(Self.number(y - 10))\" x2=\"\(Self.number(x + 5))\" y2=\"\(Self.number(y + 1))\"/><text x=\"\(Self.number(x + 14))\" y=\"\(Self.number(y))\">group or join done</text>\n"
        out += "</g>\n"
    }

    /// A status as a CSS class: known ones have a colour, others fall back to grey.
    private static func statusClass(_ status: String) -> String {
        statusColours.contains { $0.status == status } ? status : "cancelled"
    }

    /// 1, 2 or 5 times a power of ten: about ten ticks across the run.
    static func tickStep(for duration: Double) -> Double {
        var step = 0.001
        let factors = [2.0, 2.5, 2.0]  // 1 → 2 → 5 → 10
        var index = 0
        while duration / step > 10 {
            step *= factors[index % 3]
            index += 1
        }
        return step
    }

    /// `350ms`, `2.5s`, `1m30s`, `1h05m`.
    /// `1 task`, `2 tasks`: the title's count.
    static func taskCount(_ count: Int) -> String { "\(count) task\(count == 1 ? "" : "s")" }

    static func durationText(_ seconds: Double) -> String {
        if seconds <= 0 { return "0s" }
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        if seconds < 60 {
            let tenths = (seconds * 10).rounded() / 10
            return tenths == tenths.rounded() ? "\(Int(tenths))s" : "\(tenths)s"
        }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return "\(whole / 60)m" + (whole % 60 == 0 ? "" : "\(whole % 60)s") }
        let minutes = (whole % 3600) / 60
        return "\(whole / 3600)h" + (minutes < 10 ? "0" : "") + "\(minutes)m"
    }

    /// Two decimals at most, no trailing zeros: SVG coordinates.
    private static func number(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// Text and attribute values: `&`, `<`, `>`, quotes escaped, and control
    /// characters (not allowed in XML 1.0) as U+FFFD.
    private static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value) {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}

@testable import FlowrunEngine
import FlowrunModel
import Testing

/// How a `run:` script starts (`ScriptLaunch`) and the argv it becomes.
@Suite struct ScriptLaunchTests {
    @Test func aTaskShellWinsThenAShebangThenTheWorkflowShell() {
        #expect(ScriptLaunch.of(shell: ["python3"], script: "print(1)") == .interpreter(["python3"]))
        #expect(ScriptLaunch.of(shell: nil, script: "#!/usr/bin/env python3\r\nprint(1)") == .shebang("#!/usr/bin/env python3"))
        #expect(ScriptLaunch.of(shell: nil, script: " #!/bin/sh") == .shellCommand)
        #expect(ScriptLaunch.of(shell: [], script: "echo") == .shellCommand)
    }

    @Test func theArgumentsOfEachLaunch() {
        var request = LaunchRequest(shell: "/bin/sh", script: "echo hi", environment: [], workingDirectory: nil, standardOutput: nil, standardError: nil)
        #expect(request.arguments == ["/bin/sh", "-c", "echo hi"])
        var long = request
        long.run(.shellCommand, from: "/r/logs/a.log.1.sh")
        #expect(long.arguments == ["/bin/sh", "/r/logs/a.log.1.sh"])
        var interpreter = request
        interpreter.run(.interpreter(["bash", "-eu", "-o", "pipefail"]), from: "/r/logs/a.log.1.script")
        #expect(interpreter.shell == "bash")
        #expect(interpreter.arguments == ["bash", "-eu", "-o", "pipefail", "/r/logs/a.log.1.script"])
        request.run(.shebang("#!/usr/bin/env python3"), from: "/r/logs/a.log.1.script")
        #expect(request.shell == "/r/logs/a.log.1.script")
        #expect(request.arguments == ["/r/logs/a.log.1.script"])
    }
}

import CFlowrunSystem
import Glibc

/// Starts a detached thread running `body` (a pthread: Foundation's `Thread`
/// would load all of Foundation into every flowrun process).
package func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    final class Start: @unchecked Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { argument in
        let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
        flowrun_name_this_thread(start.name)
        start.body()
        return nil
    }, start)
    precondition(result == 0, "cannot start the \(name) thread: errno \(result)")
    pthread_detach(thread)
}

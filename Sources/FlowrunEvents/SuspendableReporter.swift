/// A reporter that must know when flowrun stops for Ctrl-Z: the live view
/// gives the terminal back (its region closed, the cursor shown) before
/// flowrun stops, and draws afresh below what the shell printed after `fg`.
/// The engine owns SIGTSTP and SIGCONT; a reporter does not handle them.
package protocol SuspendableReporter: RunReporter {
    /// On the engine's queue, just before flowrun stops: done when it returns.
    func suspend()
    /// On the engine's queue, once flowrun runs again.
    func resume()
}

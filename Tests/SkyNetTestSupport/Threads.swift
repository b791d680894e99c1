import Foundation

// The library's `startThread` / `onOwnThread` (Support/Threads.swift) are internal to it;
// these are the same two helpers for the test support code.

/// Runs `body` on a new thread of its own: where blocking calls (read, write, waits) belong,
/// away from the cooperative pool.
func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.stackSize = 512 * 1024
    thread.start()
}

/// Runs a blocking call on a thread of its own and awaits its result.
func onOwnThread<T: Sendable>(named name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        startThread(named: name) { continuation.resume(with: Result { try body() }) }
    }
}
